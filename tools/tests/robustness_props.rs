//! Property tests on the edges that take untrusted input: the read-only SQL
//! guard, and the reader on damaged database files (the foreign Ingero v0.8
//! format and this project's own). Run briefly here; set PROPTEST_CASES for a
//! longer run (e.g. `PROPTEST_CASES=20000 cargo test -p ingero-tools --test
//! robustness_props --release`).

use ingero_store::TraceDb;
use ingero_tools::explain::explain;
use ingero_tools::sql::{run_sql, SqlLimits};
use ingero_tools::Scope;
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use std::time::Duration;

fn seed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

const PREFIXES: &[&str] = &["", "COMMIT; ", "SELECT 1; ", "BEGIN; ", "/* c */ ", "END; "];
const WRITES: &[&str] = &[
    "DELETE FROM cuda_calls",
    "UPDATE cuda_calls SET dur_ns = 0",
    "INSERT INTO sessions(started_ns) VALUES (1)",
    "DROP TABLE cuda_calls",
    "ATTACH DATABASE '/tmp/ingero-prop-attach.db' AS x",
    "PRAGMA journal_mode = DELETE",
    "PRAGMA user_version = 7",
    "PRAGMA query_only = 0",
    "CREATE TABLE t(x)",
    "CREATE TEMP TABLE t(x)",
    "SELECT load_extension('/tmp/nothing')",
    "VACUUM INTO '/tmp/ingero-prop-vacuum.db'",
    "REINDEX",
    "ANALYZE",
    "SAVEPOINT a",
    "WITH x AS (SELECT 1) DELETE FROM cuda_calls",
    "SELECT writefile('/tmp/ingero-prop-write', 'y')",
    "INSERT INTO aggregates SELECT * FROM aggregates",
];
const SUFFIXES: &[&str] = &[
    "",
    ";",
    "; SELECT 1",
    " -- trailing",
    "; DELETE FROM host_events",
];

/// A native trace written by this project's capture.
fn native() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../investigations/pageable-vs-pinned-h200.db")
}

/// Cases per property: `PROPTEST_CASES` when set, else the short CI count.
fn cases(ci: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ci)
}

fn digest(path: &Path) -> Vec<u8> {
    std::fs::read(path).expect("read database")
}

fn vary_case(s: &str, mask: u64) -> String {
    s.chars()
        .enumerate()
        .map(|(i, c)| {
            if mask >> (i % 64) & 1 == 1 {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(96), ..ProptestConfig::default() })]

    /// No statement built from write, attach, pragma, extension and
    /// transaction fragments changes the file or leaves a side effect.
    #[test]
    fn sql_guard_lets_no_write_through(
        p in 0..PREFIXES.len(),
        w in 0..WRITES.len(),
        s in 0..SUFFIXES.len(),
        mask in any::<u64>(),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("seed.db");
        std::fs::copy(seed(), &path).expect("copy");
        let before = digest(&path);
        let db = TraceDb::open(&path).expect("open");
        let sql = format!("{}{}{}", PREFIXES[p], vary_case(WRITES[w], mask), SUFFIXES[s]);
        let limits = SqlLimits { timeout: Duration::from_millis(500), ..SqlLimits::default() };
        let result = run_sql(&db, &sql, &limits, None);
        prop_assert!(result.is_err(), "{sql} was accepted: {result:?}");
        // The same connection still answers, and still refuses to write.
        prop_assert!(run_sql(&db, "SELECT COUNT(*) FROM cuda_calls", &limits, None).is_ok());
        drop(db);
        prop_assert_eq!(digest(&path), before);
        for side in ["/tmp/ingero-prop-attach.db", "/tmp/ingero-prop-vacuum.db", "/tmp/ingero-prop-write"] {
            prop_assert!(!Path::new(side).exists(), "{side} created by {sql}");
        }
    }

    /// Damaged files give an error or a report, never a panic or a hang.
    #[test]
    fn damaged_databases_fail_cleanly(
        own_format in any::<bool>(),
        edits in proptest::collection::vec((any::<u32>(), any::<u8>()), 1..24),
        truncate in proptest::option::of(any::<u32>()),
    ) {
        let mut bytes = std::fs::read(if own_format { native() } else { seed() }).expect("seed");
        let len = bytes.len();
        for (at, value) in edits {
            bytes[at as usize % len] = value;
        }
        if let Some(n) = truncate {
            bytes.truncate(64 + n as usize % (len - 64));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("damaged.db");
        std::fs::write(&path, &bytes).expect("write");
        if let Ok(db) = TraceDb::open(&path) {
            let _ = explain(&db, &Scope::ALL);
            let _ = run_sql(&db, "SELECT * FROM cuda_calls", &SqlLimits::default(), None);
        }
    }
}

#[test]
fn a_query_that_never_ends_is_interrupted() {
    let db = TraceDb::open(&seed()).expect("open");
    let limits = SqlLimits {
        timeout: Duration::from_millis(300),
        ..SqlLimits::default()
    };
    let started = std::time::Instant::now();
    let r = run_sql(
        &db,
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n",
        &limits,
        None,
    );
    assert!(r.is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
}
