//! Whether the columns the analyses read hold what they can read.
//!
//! A crafted or damaged file can hold any value in any column: text where a
//! time belongs, a blob, NULL, a real, or an integer no capture writes. Read
//! as it is, such a row either stops a read with SQLite's own words, or
//! drops out of a time-window query unseen, and the analysis looks clean
//! while it is wrong. So [`crate::TraceDb::open`] checks the columns of
//! [`CHECKED`] first, and refuses the file ([`crate::StoreError::Unreadable`])
//! when a row breaks its column's [`Rule`]. No row is skipped: an analysis
//! of a file with rows left out would be silently incomplete.
//!
//! Tables of at most [`SCAN_ROWS`] rows are checked row by row. Larger ones
//! (raw calls and host events of long captures) are checked in their time
//! columns through the index, and in full when a column's declared type
//! would let SQLite store another kind of value; a row of theirs that
//! breaks another column is found when an analysis reads it, and
//! [`crate::TraceDb::classify`] then runs the full check to name it.

mod columns;

pub use columns::{Rule, TableColumns, CHECKED};
use rusqlite::Connection;
use std::fmt;

/// Tables of at most this many rows are checked row by row on opening: a few
/// milliseconds each, where a raw table of millions of rows would cost seconds.
pub const SCAN_ROWS: i64 = 200_000;

/// Longest example value a message quotes, characters.
const EXAMPLE_CHARS: usize = 40;

/// Rows of one column that an analysis cannot read as it means to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// How many rows break the column's rule.
    pub rows: i64,
    /// One offending value, as an SQL literal (`'hello'`, `X'00'`, `NULL`).
    pub example: String,
    /// What the column must hold.
    pub wants: String,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (rows, hold) = if self.rows == 1 {
            ("row", "holds")
        } else {
            ("rows", "hold")
        };
        write!(
            f,
            "{} {rows} of table {} {hold} in column {} a value that is not {} (e.g. {})",
            self.rows, self.table, self.column, self.wants, self.example
        )
    }
}

/// The check made on opening: every column of small tables, the time
/// columns of large ones (see the module documentation).
pub fn on_open(conn: &Connection) -> rusqlite::Result<Option<Damage>> {
    check(conn, false)
}

/// Every row of every checked column, whatever the table's size: run when a
/// read has already failed on a value, to name it.
pub fn every_row(conn: &Connection) -> rusqlite::Result<Option<Damage>> {
    check(conn, true)
}

/// True for the errors a read raises on a value of the wrong type or range,
/// those [`every_row`] can explain.
pub fn is_value_error(err: &rusqlite::Error) -> bool {
    matches!(
        err,
        rusqlite::Error::InvalidColumnType(..)
            | rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
    ) || err.to_string().contains("integer overflow")
}

/// The first damaged column of [`CHECKED`], in its order.
fn check(conn: &Connection, every_row: bool) -> rusqlite::Result<Option<Damage>> {
    for (table, wanted) in CHECKED {
        let declared = declared_columns(conn, table)?;
        let cols: Vec<(&'static str, Rule, bool)> = wanted
            .iter()
            .filter_map(|(name, rule)| {
                declared
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, decl)| (*name, *rule, rule.fits_declared(decl)))
            })
            .collect();
        if cols.is_empty() {
            continue;
        }
        let whole =
            every_row || cols.iter().any(|(_, _, fits)| !fits) || at_most(conn, table, SCAN_ROWS)?;
        let found = if whole {
            scan(conn, table, &cols)?
        } else {
            time_bounds(conn, table, &cols)?
        };
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// The columns of `table` with their declared types; empty when the file
/// has no such table.
fn declared_columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(&format!("PRAGMA table_info(\"{table}\")"))?;
    let cols = stmt
        .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(cols)
}

/// Whether `table` has at most `n` rows (reads at most `n + 1`).
fn at_most(conn: &Connection, table: &str, n: i64) -> rusqlite::Result<bool> {
    let rows: i64 = conn.query_row(
        &format!("SELECT COUNT(*) FROM (SELECT 1 FROM \"{table}\" LIMIT ?1)"),
        [n + 1],
        |r| r.get(0),
    )?;
    Ok(rows <= n)
}

/// Every row of `table`, every column of `cols`, in one pass.
fn scan(
    conn: &Connection,
    table: &'static str,
    cols: &[(&'static str, Rule, bool)],
) -> rusqlite::Result<Option<Damage>> {
    let sums: Vec<String> = cols
        .iter()
        .map(|(c, rule, _)| format!("COALESCE(SUM({}), 0)", rule.refuses_sql(c)))
        .collect();
    let counts: Vec<i64> = conn.query_row(
        &format!("SELECT {} FROM \"{table}\"", sums.join(", ")),
        [],
        |r| (0..cols.len()).map(|i| r.get(i)).collect(),
    )?;
    for (&(column, rule, _), rows) in cols.iter().zip(counts) {
        if rows > 0 {
            return damage(conn, table, column, rule, rows).map(Some);
        }
    }
    Ok(None)
}

/// The bounded time columns of a large `table`, through its index where it
/// has one: values below or above the rule's bounds, and NULL. Text and
/// blobs sort above every number, so they count as above.
fn time_bounds(
    conn: &Connection,
    table: &'static str,
    cols: &[(&'static str, Rule, bool)],
) -> rusqlite::Result<Option<Damage>> {
    for &(column, rule, _) in cols {
        let Rule::Int(lo, hi) = rule else { continue };
        if lo != 0 || hi != crate::open::LATEST_NS {
            continue;
        }
        let rows: i64 = conn.query_row(
            &format!(
                "SELECT (SELECT COUNT(*) FROM \"{table}\" WHERE {column} < ?1) \
                 + (SELECT COUNT(*) FROM \"{table}\" WHERE {column} > ?2) \
                 + (SELECT COUNT(*) FROM \"{table}\" WHERE {column} IS NULL)"
            ),
            [lo, hi],
            |r| r.get(0),
        )?;
        if rows > 0 {
            return damage(conn, table, column, rule, rows).map(Some);
        }
    }
    Ok(None)
}

/// The damage of `rows` rows of `table.column`, with an example value.
fn damage(
    conn: &Connection,
    table: &'static str,
    column: &'static str,
    rule: Rule,
    rows: i64,
) -> rusqlite::Result<Damage> {
    let example: Option<String> = conn
        .query_row(
            &format!(
                "SELECT quote({column}) FROM \"{table}\" WHERE {} LIMIT 1",
                rule.refuses_sql(column)
            ),
            [],
            |r| r.get(0),
        )
        .ok();
    let example = example.unwrap_or_else(|| "?".into());
    let example = if example.chars().count() > EXAMPLE_CHARS {
        let head: String = example.chars().take(EXAMPLE_CHARS).collect();
        format!("{head}...")
    } else {
        example
    };
    Ok(Damage {
        table,
        column,
        rows,
        example,
        wants: rule.wants(),
    })
}
