//! A real capture with arbitrary values written into a column the analyses
//! read (huge, negative, NULL, text, blob, real) never panics the binary:
//! `explain`, `report`, `export` and `query` exit 0 or 2. When the value is
//! one no analysis can read as it means to (not an integer where one
//! belongs), none of them gives a clean-looking analysis: they exit 2 with a
//! message naming the table. Set PROPTEST_CASES for a longer run.

use proptest::prelude::*;
use std::path::Path;
use std::process::Command;

/// The seed: a small capture of this project's own (schema 1, so that the
/// reader's views of newer columns are exercised too).
const SEED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../investigations/pytorch-dataloader-starvation-h200.db"
);

/// Analysed columns the seed has rows in: `(table, column)`.
const COLUMNS: &[(&str, &str)] = &[
    ("sessions", "started_ns"),
    ("sessions", "stopped_ns"),
    ("processes", "pid"),
    ("processes", "comm"),
    ("processes", "first_seen_ns"),
    ("cuda_ops", "name"),
    ("cuda_calls", "ts_ns"),
    ("cuda_calls", "dur_ns"),
    ("cuda_calls", "pid"),
    ("cuda_calls", "tid"),
    ("cuda_calls", "op_id"),
    ("cuda_calls", "bytes"),
    ("cuda_calls", "ret"),
    ("host_events", "ts_ns"),
    ("host_events", "pid"),
    ("host_events", "kind"),
    ("host_events", "dur_ns"),
    ("host_events", "arg"),
    ("aggregates", "bucket_ns"),
    ("aggregates", "count"),
    ("aggregates", "sum_dur_ns"),
    ("aggregates", "pid"),
    ("system_snapshots", "ts_ns"),
    ("system_snapshots", "cpu_pct"),
];

/// A value written into the column.
#[derive(Debug, Clone)]
enum Value {
    Huge,
    Negative,
    Null,
    Text,
    Blob,
    Real,
}

fn value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Huge),
        Just(Value::Negative),
        Just(Value::Null),
        Just(Value::Text),
        Just(Value::Blob),
        Just(Value::Real),
    ]
}

impl Value {
    fn sql(&self) -> &'static str {
        match self {
            Value::Huge => "9223372036854775807",
            Value::Negative => "-5",
            Value::Null => "NULL",
            Value::Text => "'hello'",
            Value::Blob => "X'00FF'",
            Value::Real => "1.5",
        }
    }

    /// True when no analysis can read the value in `column`. A text column
    /// stores numbers as text (SQLite's affinity), so only NULL and blobs
    /// are unreadable there; a number column takes reals.
    fn unreadable(&self, column: &str) -> bool {
        let text = matches!(column, "comm" | "name");
        match self {
            Value::Huge | Value::Negative => false,
            Value::Null | Value::Blob => true,
            Value::Text => !text,
            Value::Real => !text && column != "cpu_pct",
        }
    }
}

/// Writes `value` into `column` of the first `rows` rows of `table`. NULL
/// needs the table rebuilt without its NOT NULL constraints (and without
/// its indexes), as a crafted file would be.
fn craft(db: &Path, table: &str, column: &str, value: &Value, rows: u32, rebuild: bool) {
    let conn = rusqlite::Connection::open(db).expect("open seed copy");
    if rebuild || matches!(value, Value::Null) {
        conn.execute_batch(&format!(
            "CREATE TABLE crafted AS SELECT * FROM {table}; DROP TABLE {table}; \
             ALTER TABLE crafted RENAME TO {table};"
        ))
        .expect("rebuild");
    }
    let key: String = conn
        .prepare(&format!("PRAGMA table_info({table})"))
        .expect("table_info")
        .query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(5)?)))
        .expect("columns")
        .filter_map(Result::ok)
        .filter(|(_, pk)| *pk > 0)
        .map(|(name, _)| name)
        .collect::<Vec<_>>()
        .join(", ");
    let has_rowid = rebuild || matches!(value, Value::Null) || table != "aggregates";
    let sql = if has_rowid {
        format!(
            "UPDATE OR IGNORE {table} SET {column} = {} WHERE rowid IN \
             (SELECT rowid FROM {table} LIMIT {rows})",
            value.sql()
        )
    } else {
        format!(
            "UPDATE OR IGNORE {table} SET {column} = {} WHERE ({key}) IN \
             (SELECT {key} FROM {table} LIMIT {rows})",
            value.sql()
        )
    };
    conn.execute_batch(&sql).expect("craft");
}

/// The commands of the property, each with the extra arguments it needs.
fn commands(db: &Path, dir: &Path) -> Vec<Vec<String>> {
    let db = db.display().to_string();
    let html = dir.join("r.html").display().to_string();
    let json = dir.join("t.json").display().to_string();
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        s(&["explain", "--db", &db]),
        s(&["report", "--db", &db, "--out", &html]),
        s(&[
            "export", "--format", "perfetto", "--db", &db, "--out", &json,
        ]),
        s(&["export", "--format", "folded", "--db", &db]),
        s(&["query", "--db", &db, "--limit", "5"]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn crafted_values_give_an_analysis_or_a_refusal_naming_the_table(
        which in 0..COLUMNS.len(),
        value in value(),
        rows in 1u32..4,
        rebuild in any::<bool>(),
    ) {
        let (table, column) = COLUMNS[which];
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("crafted.db");
        std::fs::copy(SEED, &db).expect("copy seed");
        craft(&db, table, column, &value, rows, rebuild);
        for args in commands(&db, dir.path()) {
            let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
                .args(&args)
                .output()
                .expect("run ingero");
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("{} with {table}.{column} = {value:?}: {:?} {stderr}", args[0], out.status);
            prop_assert!(matches!(out.status.code(), Some(0) | Some(2)), "{}", what);
            prop_assert!(!stderr.contains("panicked"), "{}", what);
            if value.unreadable(column) {
                prop_assert_eq!(out.status.code(), Some(2), "{}", what);
                prop_assert!(stderr.contains(table), "{}", what);
            }
        }
    }
}
