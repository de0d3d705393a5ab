//! The `ingero` binary: explain/query on the seed database, and a one-line
//! error with exit code 2 for every kind of bad database.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ingero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(args)
        .output()
        .expect("run ingero")
}

fn seed() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
        .display()
        .to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn explain_on_the_seed_reads_chains_first_then_processes_then_ops() {
    let out = ingero(&["explain", "--db", &seed()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let chains = text.find("Causal chains").expect("chains");
    let procs = text.find("Per process").expect("processes");
    let ops = text.find("CUDA calls\n").expect("ops");
    assert!(chains < procs && procs < ops);
    assert!(text.contains("[HIGH]"));
    assert!(text.contains("dataloader_worker_contention"));
    let idle = text.find("GPU idle\n").expect("idle section");
    assert!(idle < chains, "the idle breakdown leads");
    assert!(text.contains("host_input_pipeline"));
    assert!(text.contains("cudaStreamSynchronize"));
    assert!(text.contains("sampled 16/30"), "launch sampling disclosed");
    assert!(text.contains("What this file cannot tell"));
}

#[test]
fn explain_json_is_the_report() {
    let out = ingero(&["explain", "--db", &seed(), "--json", "--since", "40s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let causes: Vec<&str> = v["chains"]["chains"]
        .as_array()
        .expect("chains")
        .iter()
        .filter_map(|c| c["cause"].as_str())
        .collect();
    assert_eq!(causes[0], "host_input_pipeline");
    assert!(
        causes.contains(&"dataloader_worker_contention"),
        "{causes:?}"
    );
    assert_eq!(v["window"]["duration_s"].as_f64(), Some(40.0));
    assert_eq!(v["capture"]["format"]["format"], "ingero_go");
}

#[test]
fn query_filters_and_pages() {
    let out = ingero(&[
        "query",
        "--db",
        &seed(),
        "--op",
        "cudaStreamSync",
        "--limit",
        "5",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["total"], 21);
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(5));
    assert_eq!(v["next_offset"], 5);
    let text = stdout(&ingero(&[
        "query",
        "--db",
        &seed(),
        "--op",
        "process_fork",
        "--pid",
        "2233",
    ]));
    // 2233's 8 fork rows: 4 worker processes and 4 threads (no fork events).
    assert!(text.contains("4 matching events"), "{text}");
    assert!(text.contains("child 2254"));
}

fn assert_bad_input(args: &[&str], needle: &str) {
    let out = ingero(args);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("ingero: "), "{err}");
    assert!(err.contains(needle), "{err} lacks {needle}");
    assert!(stdout(&out).is_empty());
}

fn corrupt_copy(dir: &Path) -> PathBuf {
    // A real database whose schema page is overwritten with garbage.
    let path = dir.join("corrupt.db");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch(
        "CREATE TABLE ingero_meta(key TEXT PRIMARY KEY, value TEXT);
         CREATE TABLE cuda_calls(id INTEGER PRIMARY KEY, ts_ns INTEGER);
         INSERT INTO ingero_meta VALUES ('format', 'ingero-rs');",
    )
    .expect("ddl");
    drop(conn);
    let mut bytes = std::fs::read(&path).expect("read");
    for b in bytes.iter_mut().skip(100).take(3000) {
        *b = 0xA5;
    }
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn bad_databases_exit_2_with_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope.db");
    assert_bad_input(
        &["explain", "--db", &missing.display().to_string()],
        "no such file",
    );

    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "these are not the bytes you are looking for\n").expect("write");
    assert_bad_input(
        &["explain", "--db", &text.display().to_string()],
        "not an SQLite database",
    );

    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").expect("write");
    assert_bad_input(
        &["explain", "--db", &empty.display().to_string()],
        "holds no trace data",
    );

    let no_tables = dir.path().join("no-tables.db");
    rusqlite::Connection::open(&no_tables)
        .and_then(|c| c.execute_batch("PRAGMA user_version = 1; VACUUM;"))
        .expect("empty sqlite");
    assert_bad_input(
        &["query", "--db", &no_tables.display().to_string()],
        "holds no trace data",
    );

    let corrupt = corrupt_copy(dir.path());
    assert_bad_input(
        &["explain", "--db", &corrupt.display().to_string()],
        "corrupt",
    );

    assert_bad_input(
        &["explain", "--db", &seed(), "--since", "soon"],
        "bad duration",
    );
    assert_bad_input(&["query", "--db", &seed(), "--op", "cudaFly"], "unknown op");
}
