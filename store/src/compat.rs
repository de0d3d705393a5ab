//! Files written before the newest schema read as if they had it: the
//! reader adds, in its connection's TEMP schema, the tables an older file
//! lacks (empty) and views that give its tables the newer columns (with the
//! value an older file means). The file itself is never touched, and every
//! analysis can select the same columns whatever wrote the file.

use crate::schema::{
    ADDED_COLUMNS, GPU_TABLES_SQL, LAUNCH_LEVEL_TABLE_SQL, NCCL_TABLES_SQL, STACK_TABLES_SQL,
};
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

/// Creates the version-7 NCCL and merge tables (empty) in the TEMP schema.
pub(crate) fn add_empty_nccl_tables(conn: &Connection) -> rusqlite::Result<()> {
    let sql = NCCL_TABLES_SQL
        .replace("CREATE TABLE ", "CREATE TEMP TABLE ")
        .replace("CREATE INDEX ", "CREATE INDEX temp.");
    conn.execute_batch(&sql)
}

/// Creates the version-9 launch-level table (empty) in the TEMP schema.
pub(crate) fn add_empty_launch_level_table(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&LAUNCH_LEVEL_TABLE_SQL.replace("CREATE TABLE ", "CREATE TEMP TABLE "))
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

/// Adds to the table `schema.table` (one the reader made itself) the
/// columns it gains after schema `version`, where it does not have them yet.
pub(crate) fn add_columns_to_table(
    conn: &Connection,
    schema: &str,
    table: &str,
    version: i64,
) -> rusqlite::Result<()> {
    let have: Vec<String> = conn
        .prepare(&format!("PRAGMA {schema}.table_info({table})"))?
        .query_map([], |r| r.get::<_, String>(1))?
        .collect::<rusqlite::Result<_>>()?;
    for (_, columns) in ADDED_COLUMNS.iter().filter(|(v, _)| *v > version) {
        for (t, column, value) in columns.iter().filter(|(t, _, _)| *t == table) {
            if !have.iter().any(|c| c == column) {
                conn.execute_batch(&format!(
                    "ALTER TABLE {schema}.{t} ADD COLUMN {column} DEFAULT {value};"
                ))?;
            }
        }
    }
    Ok(())
}

/// Presents a native file of schema `version` as the current schema.
pub(crate) fn present_native(conn: &Connection, version: i64) -> rusqlite::Result<()> {
    if version < 9 {
        add_empty_launch_level_table(conn)?;
    }
    if version < 7 {
        add_empty_nccl_tables(conn)?;
    }
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
        let exists = |schema: &str| -> rusqlite::Result<bool> {
            conn.query_row(
                &format!(
                    "SELECT COUNT(*) > 0 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?1"
                ),
                [table],
                |r| r.get(0),
            )
        };
        if exists("main")? {
            conn.execute_batch(&format!(
                "CREATE TEMP VIEW {table} AS SELECT *{} FROM main.{table};",
                added_columns_since(table, version)
            ))?;
        } else if exists("temp")? {
            // A table the file lacks, shown empty: it gains the columns itself.
            add_columns_to_table(conn, "temp", table, version)?;
        }
    }
    Ok(())
}
