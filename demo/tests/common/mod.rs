//! Shared helpers: each scenario is generated once per test binary into a
//! temporary directory, and small SQL/percentile utilities.

#![allow(dead_code)]

use ingero_demo::{generate, DemoOptions, DemoSummary, Scenario};
use rusqlite::Connection;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

struct Cache {
    dir: tempfile::TempDir,
    made: Vec<(Scenario, DemoSummary)>,
}

static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();

/// The default-seed database of `scenario`, generated on first use.
pub fn db(scenario: Scenario) -> (PathBuf, DemoSummary) {
    let cache = CACHE.get_or_init(|| {
        Mutex::new(Cache {
            dir: tempfile::tempdir().expect("tempdir"),
            made: Vec::new(),
        })
    });
    let mut c = cache.lock().expect("cache lock");
    if let Some((_, s)) = c.made.iter().find(|(s, _)| *s == scenario) {
        return (s.path.clone(), s.clone());
    }
    let path = c.dir.path().join(format!("{}.db", scenario.name()));
    let summary = generate(scenario, &path, &DemoOptions::default()).expect("generate");
    c.made.push((scenario, summary.clone()));
    (path, summary)
}

/// Opens a generated file for ad-hoc SQL.
pub fn conn(scenario: Scenario) -> Connection {
    let (path, _) = db(scenario);
    Connection::open(path).expect("open")
}

/// Nearest-rank percentile of `v` (`p` in 0..=1).
pub fn pct(v: &[i64], p: f64) -> i64 {
    let mut v = v.to_vec();
    v.sort_unstable();
    let idx = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[idx]
}

/// One integer column of a query.
pub fn ints(c: &Connection, sql: &str, params: impl rusqlite::Params) -> Vec<i64> {
    let mut st = c.prepare(sql).expect("prepare");
    st.query_map(params, |r| r.get::<_, i64>(0))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// A single integer.
pub fn one(c: &Connection, sql: &str, params: impl rusqlite::Params) -> i64 {
    c.query_row(sql, params, |r| r.get(0)).expect("query_row")
}

/// The target (training) pid of the session.
pub fn main_pid(c: &Connection) -> i64 {
    let s: String = c
        .query_row("SELECT target_pids FROM sessions", [], |r| r.get(0))
        .expect("session");
    s.trim_matches(|ch| ch == '[' || ch == ']')
        .parse()
        .expect("one target pid")
}

/// Durations of one op on the main thread, in call order.
pub fn main_thread_durs(c: &Connection, op: &str) -> Vec<i64> {
    let pid = main_pid(c);
    ints(
        c,
        "SELECT c.dur_ns FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
         WHERE o.name = ?1 AND c.tid = ?2 ORDER BY c.ts_ns",
        rusqlite::params![op, pid],
    )
}
