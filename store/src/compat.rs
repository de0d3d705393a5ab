//! Files written before the newest schema read as if they had it: the
//! reader adds, in its connection's TEMP schema, the tables an older file
//! lacks (empty) and views that give its tables the newer columns (with the
//! value an older file means). The file itself is never touched, and every
//! analysis can select the same columns whatever wrote the file.

use crate::schema::{ADDED_COLUMNS, GPU_TABLES_SQL, STACK_TABLES_SQL};
use rusqlite::Connection;

/// Creates the version-2 tables (empty) in the TEMP schema.
pub(crate) fn add_empty_gpu_tables(conn: &Connection) -> rusqlite::Result<()> {
    let sql = GPU_TABLES_SQL.replace("CREATE TABLE ", "CREATE TEMP TABLE ");
    conn.execute_batch(&sql)
}

/// Creates the version-4 stack tables (empty) in the TEMP schema.
pub(crate) fn add_empty_stack_tables(conn: &Connection) -> rusqlite::Result<()> {
    let sql = STACK_TABLES_SQL
        .replace("CREATE TABLE ", "CREATE TEMP TABLE ")
        .replace("CREATE INDEX ", "CREATE INDEX temp.");
    conn.execute_batch(&sql)
}

/// The extra columns `table` gains after version 1, as `, value AS column`
/// items to append to a view's select list.
pub(crate) fn added_columns(table: &str) -> String {
    added_columns_since(table, 1)
}

/// The extra columns `table` gains after schema `version`.
fn added_columns_since(table: &str, version: i64) -> String {
    ADDED_COLUMNS
        .iter()
        .filter(|(added_in, _)| *added_in > version)
        .flat_map(|(_, columns)| columns.iter())
        .filter(|(t, _, _)| *t == table)
        .map(|(_, column, value)| format!(", {value} AS {column}"))
        .collect()
}

/// Presents a native file of schema `version` as the current schema.
pub(crate) fn present_native(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    if version < 4 {
        add_empty_stack_tables(conn)?;
    }
    if version < 2 {
        add_empty_gpu_tables(conn)?;
    }
    let mut tables: Vec<&str> = ADDED_COLUMNS
        .iter()
        .filter(|(added_in, _)| *added_in > version)
        .flat_map(|(_, columns)| columns.iter().map(|(t, _, _)| *t))
        .collect();
    tables.sort_unstable();
    tables.dedup();
    for table in tables {
        conn.execute_batch(&format!(
            "CREATE TEMP VIEW {table} AS SELECT *{} FROM main.{table};",
            added_columns_since(table, version)
        ))?;
    }
    Ok(())
}
