//! Read-only SQL over a trace database, safe to hand to an AI assistant.
//!
//! Safety does not depend on parsing the SQL text. Four layers hold it:
//! the [`TraceDb`] connection is opened read-only with `query_only` set; an
//! SQLite authorizer installed for the duration of the query allows only
//! `SELECT`, reads of the trace tables (directly or through their views) and
//! an allow-list of side-effect-free functions, and refuses everything else
//! (writes, `ATTACH`, `PRAGMA`, transactions, temp objects, `load_extension`);
//! the prepared statement must report itself read-only; and exactly one
//! statement is accepted. A progress handler enforces a deadline and
//! cancellation, and the result is capped in rows and bytes.

use ingero_store::TraceDb;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::ValueRef;
use rusqlite::Connection;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Tables (and, for Ingero files, views) a query may read.
pub const READABLE_TABLES: &[&str] = &[
    "sessions",
    "processes",
    "cuda_ops",
    "cuda_calls",
    "host_events",
    "system_snapshots",
    "aggregates",
    "capture_losses",
    "ingero_meta",
    "gpu_devices",
    "gpu_util_samples",
    "gpu_process_samples",
    "gpu_status",
    "cuda_activity",
    "stacks",
    "stack_samples",
    "stack_counts",
    "stack_sources",
    "nccl_calls",
    "nccl_comms",
    "merge_sources",
    "launch_level_changes",
    // Schema discovery: lets a client learn column names with plain SELECTs.
    "sqlite_master",
    "sqlite_schema",
    "sqlite_temp_master",
    "sqlite_temp_schema",
];

/// Functions a query may call: pure scalar, aggregate, window, date and JSON
/// functions. Anything that touches files, extensions or allocates on demand
/// (`randomblob`, `zeroblob`) is absent.
pub const ALLOWED_FUNCTIONS: &[&str] = &[
    // core scalar
    "abs",
    "changes",
    "char",
    "coalesce",
    "concat",
    "concat_ws",
    "format",
    "glob",
    "hex",
    "if",
    "ifnull",
    "iif",
    "instr",
    "length",
    "like",
    "likelihood",
    "likely",
    "lower",
    "ltrim",
    "max",
    "min",
    "nullif",
    "octet_length",
    "printf",
    "quote",
    "random",
    "replace",
    "round",
    "rtrim",
    "sign",
    "soundex",
    "substr",
    "substring",
    "trim",
    "typeof",
    "unhex",
    "unicode",
    "unlikely",
    "upper",
    // aggregate
    "avg",
    "count",
    "group_concat",
    "string_agg",
    "sum",
    "total",
    "median",
    "percentile",
    "percentile_cont",
    "percentile_disc",
    // window
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
    // date and time
    "date",
    "time",
    "datetime",
    "julianday",
    "unixepoch",
    "strftime",
    "timediff",
    // math
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "ceil",
    "ceiling",
    "cos",
    "cosh",
    "degrees",
    "exp",
    "floor",
    "ln",
    "log",
    "log10",
    "log2",
    "mod",
    "pi",
    "pow",
    "power",
    "radians",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    // JSON
    "json",
    "jsonb",
    "json_array",
    "json_array_length",
    "json_extract",
    "json_insert",
    "json_object",
    "json_patch",
    "json_quote",
    "json_remove",
    "json_replace",
    "json_set",
    "json_type",
    "json_valid",
    "json_group_array",
    "json_group_object",
    "json_each",
    "json_tree",
];

/// Limits applied to one query.
#[derive(Debug, Clone, Copy)]
pub struct SqlLimits {
    /// Wall-clock budget; the query is interrupted when it runs out.
    pub timeout: Duration,
    /// Most rows returned; more are counted as truncated, not read.
    pub max_rows: usize,
    /// Most bytes of cell data returned (text and blob length, 8 per number).
    pub max_bytes: usize,
    /// Longest SQL text accepted, bytes.
    pub max_sql_len: usize,
    /// Longest string or blob SQLite may build while evaluating, bytes.
    pub max_value_len: usize,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            timeout: Duration::from_secs(5),
            max_rows: 1_000,
            max_bytes: 1 << 20,
            max_sql_len: 64 * 1024,
            max_value_len: 4 << 20,
        }
    }
}

/// Why a result stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Truncation {
    /// The row cap was reached.
    Rows,
    /// The byte cap was reached.
    Bytes,
}

/// Result of a read-only query: column names and rows of JSON values.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SqlResult {
    /// Column names in select order.
    pub columns: Vec<String>,
    /// Rows, each as many values as `columns`. Integers and reals are JSON
    /// numbers, text is a string, NULL is null, blobs are `x'hex'` strings.
    pub rows: Vec<Vec<serde_json::Value>>,
    /// Number of rows returned.
    pub row_count: usize,
    /// Set when more rows existed than were returned.
    pub truncated: Option<Truncation>,
    /// Time spent running the query, ms.
    pub elapsed_ms: f64,
}

/// Why a query was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The query was empty.
    #[error("empty query: give one SELECT statement")]
    Empty,
    /// More than one statement.
    #[error("only one statement is allowed per query")]
    MultipleStatements,
    /// The SQL text is longer than allowed.
    #[error("query is {0} bytes long; the limit is {1}")]
    TooLong(usize, usize),
    /// The statement does something other than read the trace tables.
    #[error("not allowed: {0} (queries are read-only: one SELECT over the trace tables that sqlite_master lists)")]
    Denied(String),
    /// The deadline passed.
    #[error("query ran longer than {0:?} and was stopped; narrow it (WHERE ts_ns > ..., LIMIT)")]
    Timeout(Duration),
    /// The caller cancelled.
    #[error("query cancelled")]
    Cancelled,
    /// SQLite rejected or failed the statement (syntax, unknown column, ...).
    #[error("sqlite: {0}")]
    Sqlite(String),
}

impl SqlError {
    /// True when the query itself is at fault (everything but internal failures).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, SqlError::Cancelled)
    }
}

/// Runs one read-only statement on `db` under `limits`. Setting `cancel`
/// from another thread stops it at the next progress check.
pub fn run_sql(
    db: &TraceDb,
    sql: &str,
    limits: &SqlLimits,
    cancel: Option<Arc<AtomicBool>>,
) -> Result<SqlResult, SqlError> {
    let text = sql.trim();
    if text.is_empty() {
        return Err(SqlError::Empty);
    }
    if text.len() > limits.max_sql_len {
        return Err(SqlError::TooLong(text.len(), limits.max_sql_len));
    }
    let conn = db.conn();
    let _guard = Guard::install(conn, limits, cancel.clone());
    let started = Instant::now();
    let outcome = query(conn, text, limits);
    let elapsed = started.elapsed();
    outcome
        .map_err(|e| classify(e, elapsed, limits, cancel.as_deref(), &_guard))
        .map(|mut r| {
            r.elapsed_ms = elapsed.as_secs_f64() * 1e3;
            r
        })
}

enum RunError {
    Sqlite(rusqlite::Error),
    Denied(String),
    Multiple,
}

fn query(conn: &Connection, text: &str, limits: &SqlLimits) -> Result<SqlResult, RunError> {
    let mut stmt = conn.prepare(text).map_err(|e| match e {
        rusqlite::Error::MultipleStatement => RunError::Multiple,
        other => RunError::Sqlite(other),
    })?;
    if !stmt.readonly() {
        return Err(RunError::Denied(
            "the statement would modify the database".into(),
        ));
    }
    let columns: Vec<String> = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let ncol = columns.len();
    let mut rows_out = Vec::new();
    let mut bytes = 0usize;
    let mut truncated = None;
    let mut rows = stmt.query([]).map_err(RunError::Sqlite)?;
    while let Some(row) = rows.next().map_err(RunError::Sqlite)? {
        if rows_out.len() >= limits.max_rows {
            truncated = Some(Truncation::Rows);
            break;
        }
        let mut cells = Vec::with_capacity(ncol);
        let mut row_bytes = 0usize;
        for i in 0..ncol {
            let v = row.get_ref(i).map_err(RunError::Sqlite)?;
            let (json, size) = to_json(v);
            row_bytes += size;
            cells.push(json);
        }
        if bytes + row_bytes > limits.max_bytes {
            truncated = Some(Truncation::Bytes);
            break;
        }
        bytes += row_bytes;
        rows_out.push(cells);
    }
    Ok(SqlResult {
        columns,
        row_count: rows_out.len(),
        rows: rows_out,
        truncated,
        elapsed_ms: 0.0,
    })
}

fn to_json(v: ValueRef<'_>) -> (serde_json::Value, usize) {
    match v {
        ValueRef::Null => (serde_json::Value::Null, 4),
        ValueRef::Integer(i) => (i.into(), 8),
        ValueRef::Real(f) => (
            serde_json::Number::from_f64(f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            8,
        ),
        ValueRef::Text(t) => {
            let s = String::from_utf8_lossy(t).into_owned();
            let n = s.len();
            (serde_json::Value::String(s), n)
        }
        ValueRef::Blob(b) => {
            let mut s = String::with_capacity(3 + 2 * b.len());
            s.push_str("x'");
            for byte in b {
                s.push_str(&format!("{byte:02x}"));
            }
            s.push('\'');
            let n = s.len();
            (serde_json::Value::String(s), n)
        }
    }
}

fn classify(
    err: RunError,
    elapsed: Duration,
    limits: &SqlLimits,
    cancel: Option<&AtomicBool>,
    guard: &Guard<'_>,
) -> SqlError {
    match err {
        RunError::Multiple => SqlError::MultipleStatements,
        RunError::Denied(d) => SqlError::Denied(d),
        RunError::Sqlite(e) => {
            if let Some(what) = guard.denied.lock().ok().and_then(|d| d.clone()) {
                return SqlError::Denied(what);
            }
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    return SqlError::Cancelled;
                }
                if elapsed >= limits.timeout {
                    return SqlError::Timeout(limits.timeout);
                }
                return SqlError::Cancelled;
            }
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::AuthorizationForStatementDenied) {
                return SqlError::Denied("the statement".into());
            }
            if e.sqlite_error_code() == Some(rusqlite::ErrorCode::ReadOnly) {
                return SqlError::Denied("writing".into());
            }
            // SQLite refuses writes to a view before consulting the authorizer.
            let text = e.to_string();
            if text.contains("cannot modify") {
                return SqlError::Denied(format!("writing ({text})"));
            }
            SqlError::Sqlite(e.to_string())
        }
    }
}

/// Installs the authorizer, progress handler and limits; removes them on drop
/// so the pooled connection serves analyses unchanged afterwards.
struct Guard<'c> {
    conn: &'c Connection,
    denied: Arc<std::sync::Mutex<Option<String>>>,
    old_length: i32,
    old_sql_length: i32,
}

impl<'c> Guard<'c> {
    fn install(conn: &'c Connection, limits: &SqlLimits, cancel: Option<Arc<AtomicBool>>) -> Self {
        let denied = Arc::new(std::sync::Mutex::new(None));
        let record = Arc::clone(&denied);
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            let verdict = authorize(&ctx);
            if let Err(what) = &verdict {
                if let Ok(mut slot) = record.lock() {
                    slot.get_or_insert_with(|| what.clone());
                }
            }
            match verdict {
                Ok(()) => Authorization::Allow,
                Err(_) => Authorization::Deny,
            }
        }));
        let deadline = Instant::now() + limits.timeout;
        conn.progress_handler(
            1_000,
            Some(move || {
                Instant::now() >= deadline
                    || cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed))
            }),
        );
        let clamp = |v: usize| i32::try_from(v).unwrap_or(i32::MAX);
        let old_length = conn
            .set_limit(Limit::SQLITE_LIMIT_LENGTH, clamp(limits.max_value_len))
            .unwrap_or(-1);
        let old_sql_length = conn
            .set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, clamp(limits.max_sql_len))
            .unwrap_or(-1);
        Guard {
            conn,
            denied,
            old_length,
            old_sql_length,
        }
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.conn
            .authorizer(None::<fn(AuthContext<'_>) -> Authorization>);
        self.conn.progress_handler(0, None::<fn() -> bool>);
        if self.old_length > 0 {
            let _ = self
                .conn
                .set_limit(Limit::SQLITE_LIMIT_LENGTH, self.old_length);
        }
        if self.old_sql_length > 0 {
            let _ = self
                .conn
                .set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, self.old_sql_length);
        }
    }
}

fn readable(name: &str) -> bool {
    READABLE_TABLES.iter().any(|t| t.eq_ignore_ascii_case(name))
}

/// The policy: `Ok` allows, `Err` names what was refused.
fn authorize(ctx: &AuthContext<'_>) -> Result<(), String> {
    match ctx.action {
        AuthAction::Select | AuthAction::Recursive => Ok(()),
        AuthAction::Read { table_name, .. } => {
            // Reads made by a trace-table view (Ingero files) are the view's own.
            // A read with no database is of a common table expression (`WITH
            // t AS (...)`): SQLite names a schema for every stored table, and
            // the reads inside the CTE's body are authorised on their own.
            if readable(table_name)
                || ctx.accessor.is_some_and(readable)
                || ctx.database_name.is_none()
            {
                Ok(())
            } else {
                Err(format!("reading table {table_name}"))
            }
        }
        AuthAction::Function { function_name } => {
            if ALLOWED_FUNCTIONS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(function_name))
            {
                Ok(())
            } else {
                Err(format!("function {function_name}()"))
            }
        }
        AuthAction::Attach { .. } => Err("ATTACH".into()),
        AuthAction::Detach { .. } => Err("DETACH".into()),
        AuthAction::Pragma { pragma_name, .. } => Err(format!("PRAGMA {pragma_name}")),
        AuthAction::Transaction { .. } | AuthAction::Savepoint { .. } => {
            Err("transaction control".into())
        }
        AuthAction::Insert { table_name } => Err(format!("INSERT into {table_name}")),
        AuthAction::Update { table_name, .. } => Err(format!("UPDATE of {table_name}")),
        AuthAction::Delete { table_name } => Err(format!("DELETE from {table_name}")),
        AuthAction::CreateTempTable { .. }
        | AuthAction::CreateTempIndex { .. }
        | AuthAction::CreateTempTrigger { .. }
        | AuthAction::CreateTempView { .. } => Err("creating temporary objects".into()),
        AuthAction::CreateVtable { module_name, .. } => {
            Err(format!("creating a virtual table ({module_name})"))
        }
        other => Err(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingero_store::{CudaCall, Event, RawPolicy, SessionInfo, TraceWriter};

    fn sample_db(dir: &std::path::Path) -> TraceDb {
        let path = dir.join("t.db");
        let info = SessionInfo {
            started_ns: 1_000_000_000,
            stopped_ns: 3_000_000_000,
            ..Default::default()
        };
        let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("create");
        let events: Vec<Event> = (0..100)
            .map(|i| {
                Event::Cuda(CudaCall {
                    ts_ns: 1_000_000_000 + i * 10_000_000,
                    pid: 42,
                    tid: 42,
                    op_id: 3,
                    dur_ns: 5_000 + i,
                    bytes: 0,
                    copy_kind: -1,
                    stream: 0,
                    ret: 0,
                    ..Default::default()
                })
            })
            .collect();
        w.write_batch(&events).expect("write");
        w.finish(3_000_000_000).expect("finish");
        TraceDb::open(&path).expect("open")
    }

    fn run(db: &TraceDb, sql: &str) -> Result<SqlResult, SqlError> {
        run_sql(db, sql, &SqlLimits::default(), None)
    }

    #[test]
    fn selects_work_and_are_capped() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = sample_db(dir.path());
        let r = run(&db, "SELECT COUNT(*) AS n, AVG(dur_ns) FROM cuda_calls").expect("select");
        assert_eq!(r.columns[0], "n");
        assert_eq!(r.rows[0][0], serde_json::json!(100));
        let limits = SqlLimits {
            max_rows: 10,
            ..SqlLimits::default()
        };
        let r = run_sql(&db, "SELECT * FROM cuda_calls", &limits, None).expect("capped");
        assert_eq!(r.row_count, 10);
        assert_eq!(r.truncated, Some(Truncation::Rows));
        let limits = SqlLimits {
            max_bytes: 100,
            ..SqlLimits::default()
        };
        let r = run_sql(&db, "SELECT * FROM cuda_calls", &limits, None).expect("bytes");
        assert_eq!(r.truncated, Some(Truncation::Bytes));
        let r = run(&db, "SELECT name FROM sqlite_master WHERE type = 'table'").expect("schema");
        assert!(r.row_count > 3);
    }

    /// Every table a trace file holds can be queried: one added to the
    /// schema must be listed here too (schema discovery shows it).
    #[test]
    fn every_trace_table_is_readable() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = sample_db(dir.path());
        let tables = run(
            &db,
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
        )
        .expect("schema");
        assert!(tables.row_count > 20, "{}", tables.row_count);
        for row in &tables.rows {
            let name = row[0].as_str().expect("a name");
            let r = run(&db, &format!("SELECT * FROM {name} LIMIT 1"));
            assert!(r.is_ok(), "{name}: {r:?}");
        }
    }

    #[test]
    fn writes_and_escapes_are_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = sample_db(dir.path());
        for bad in [
            "DELETE FROM cuda_calls",
            "COMMIT; DELETE FROM cuda_calls",
            "SELECT 1; DELETE FROM cuda_calls",
            "ATTACH DATABASE '/tmp/x.db' AS x",
            "PRAGMA query_only = 0",
            "SELECT * FROM pragma_table_info('cuda_calls')",
            "CREATE TEMP TABLE t(x)",
            "SELECT load_extension('/tmp/evil')",
            "SELECT randomblob(1000000000)",
            "INSERT INTO sessions(host) VALUES ('x')",
            "BEGIN",
            "VACUUM INTO '/tmp/copy.db'",
            "WITH x AS (SELECT 1) DELETE FROM cuda_calls",
        ] {
            let err = run(&db, bad).expect_err(bad);
            assert!(err.is_bad_input(), "{bad}: {err}");
        }
        // The connection still works and is unchanged after refusals.
        let r = run(&db, "SELECT COUNT(*) FROM cuda_calls").expect("still fine");
        assert_eq!(r.rows[0][0], serde_json::json!(100));
    }

    #[test]
    fn ingero_go_views_are_readable() {
        let Some(path) = seed_db() else {
            eprintln!("seed database not found; skipped");
            return;
        };
        let db = TraceDb::open(&path).expect("open seed");
        let r = run(&db, "SELECT COUNT(*) FROM cuda_calls").expect("view read");
        assert!(r.rows[0][0].as_i64().unwrap_or(0) > 0);
        let err = run(&db, "SELECT COUNT(*) FROM src.events").expect_err("raw table");
        assert!(matches!(err, SqlError::Denied(_)), "{err}");
        let err = run(&db, "SELECT * FROM foreign_op_map").expect_err("internal table");
        assert!(matches!(err, SqlError::Denied(_)), "{err}");
        let err = run(&db, "DROP VIEW cuda_calls").expect_err("drop");
        assert!(matches!(err, SqlError::Denied(_)), "{err}");
    }

    #[test]
    fn common_table_expressions_are_not_tables() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = sample_db(dir.path());
        let r = run(
            &db,
            "WITH t AS (SELECT 1 UNION ALL SELECT 2) SELECT count(*) FROM t",
        )
        .expect("cte");
        assert_eq!(r.rows[0][0], serde_json::json!(2));
        let r = run(
            &db,
            "WITH slow AS (SELECT pid, dur_ns FROM cuda_calls) SELECT count(*) FROM slow",
        )
        .expect("cte over a trace table");
        assert_eq!(r.rows[0][0], serde_json::json!(100));
        let r = run(
            &db,
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) \
             SELECT sum(i) FROM n",
        )
        .expect("recursive cte");
        assert_eq!(r.rows[0][0], serde_json::json!(15));
        // The body of a CTE is still checked.
        let err = run(
            &db,
            "WITH t AS (SELECT * FROM sqlite_stat1) SELECT * FROM t",
        )
        .expect_err("forbidden read inside a cte");
        assert!(
            matches!(err, SqlError::Denied(_) | SqlError::Sqlite(_)),
            "{err}"
        );
    }

    /// The Ingero (Go) seed database: `INGERO_SEED_DB`, or the copy in `tests/data`.
    fn seed_db() -> Option<std::path::PathBuf> {
        let p = std::env::var_os("INGERO_SEED_DB")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
                    "../../shared/reference/ingero-investigations/pytorch-dataloader-starvation.db",
                )
            });
        p.exists().then_some(p)
    }

    #[test]
    fn runaway_queries_time_out() {
        let dir = tempfile::tempdir().expect("tmp");
        let db = sample_db(dir.path());
        let limits = SqlLimits {
            timeout: Duration::from_millis(200),
            ..SqlLimits::default()
        };
        let started = Instant::now();
        let err = run_sql(
            &db,
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c",
            &limits,
            None,
        )
        .expect_err("runaway");
        assert!(matches!(err, SqlError::Timeout(_)), "{err}");
        assert!(started.elapsed() < Duration::from_secs(3));
        let cancel = Arc::new(AtomicBool::new(true));
        let err = run_sql(
            &db,
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT MAX(x) FROM c",
            &SqlLimits::default(),
            Some(cancel),
        )
        .expect_err("cancelled");
        assert!(matches!(err, SqlError::Cancelled), "{err}");
    }
}
