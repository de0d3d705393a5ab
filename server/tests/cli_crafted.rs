//! A crafted or broken database never panics a command: extreme process
//! lifetimes (first seen at the end of time, last seen before it began)
//! give an analysis or a clear refusal, exit 0 or 2, never 101.

use std::process::Command;

#[test]
fn extreme_process_lifetimes_do_not_panic_any_command() {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../investigations/pageable-vs-pinned-h200.db"
    );
    for (name, sql) in [
        (
            "first-seen-max",
            "UPDATE processes SET first_seen_ns = 9223372036854775807",
        ),
        (
            "last-seen-min",
            "UPDATE processes SET last_seen_ns = -9223372036854775808",
        ),
        (
            "first-after-last",
            "UPDATE processes SET first_seen_ns = last_seen_ns + 1000000000000",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join(format!("{name}.db"));
        std::fs::copy(src, &db).expect("copy");
        rusqlite::Connection::open(&db)
            .expect("open")
            .execute_batch(sql)
            .expect("craft");
        let out_html = dir.path().join("report.html");
        let out_json = dir.path().join("trace.json");
        for args in [
            vec![
                "explain".to_string(),
                "--db".into(),
                db.display().to_string(),
            ],
            vec![
                "report".to_string(),
                "--db".into(),
                db.display().to_string(),
                "--out".into(),
                out_html.display().to_string(),
            ],
            vec![
                "export".to_string(),
                "--format".into(),
                "perfetto".into(),
                "--db".into(),
                db.display().to_string(),
                "--out".into(),
                out_json.display().to_string(),
            ],
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
                .args(&args)
                .output()
                .expect("run");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                matches!(out.status.code(), Some(0) | Some(2)),
                "{name} {}: {:?} {stderr}",
                args[0],
                out.status
            );
            assert!(!stderr.contains("panicked"), "{name} {}: {stderr}", args[0]);
            assert!(!stderr.contains("required arguments"), "{stderr}");
        }
    }
}

/// A copy of the small native seed with `sql` applied, in `dir`.
fn crafted(dir: &std::path::Path, sql: &str) -> std::path::PathBuf {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../investigations/pageable-vs-pinned-h200.db"
    );
    let db = dir.join("crafted.db");
    std::fs::copy(src, &db).expect("copy");
    rusqlite::Connection::open(&db)
        .expect("open")
        .execute_batch(sql)
        .expect("craft");
    db
}

/// Text where the session's start time belongs, and a `cuda_calls` table
/// rebuilt with text columns (which made `explain` report no CUDA calls at
/// all): exit 2 naming table, column, row count and value, and the way to
/// look at the rows; never SQLite's raw words, never a clean analysis.
#[test]
fn unreadable_rows_are_refused_naming_table_column_and_value() {
    for (sql, table, column, rows) in [
        (
            "UPDATE sessions SET started_ns = 'hello'",
            "sessions",
            "started_ns",
            "1 row",
        ),
        (
            "CREATE TABLE t2(id INTEGER PRIMARY KEY, session_id, ts_ns TEXT, pid TEXT, \
             tid TEXT, op_id TEXT, dur_ns TEXT, bytes TEXT, copy_kind TEXT, stream TEXT, \
             ret TEXT); INSERT INTO t2 SELECT id, session_id, CAST(ts_ns AS TEXT), pid, tid, \
             op_id, dur_ns, bytes, copy_kind, stream, ret FROM cuda_calls; \
             DROP TABLE cuda_calls; ALTER TABLE t2 RENAME TO cuda_calls",
            "cuda_calls",
            "ts_ns",
            "245 rows",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = crafted(dir.path(), sql);
        let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["explain", "--db"])
            .arg(&db)
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(out.stdout.is_empty(), "no analysis printed");
        for part in [
            format!("{rows} of table {table}"),
            format!("column {column}"),
            "(e.g. '".into(),
            "Record the capture again".into(),
            "sqlite3".into(),
        ] {
            assert!(stderr.contains(&part), "{part}: {stderr}");
        }
        assert!(!stderr.contains("Invalid column type"), "{stderr}");
    }
}

/// `ingero mcp --db` starts on a file with unreadable rows, and its tools
/// answer with the message naming them (an error result, not a crash).
#[test]
fn the_mcp_server_starts_on_unreadable_rows_and_answers_with_the_damage() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crafted(dir.path(), "UPDATE sessions SET started_ns = 'hello'");
    let mut server = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["mcp", "--db"])
        .arg(&db)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ingero mcp");
    let mut to = server.stdin.take().expect("stdin");
    let mut from = BufReader::new(server.stdout.take().expect("stdout"));
    let mut answer = || {
        let mut line = String::new();
        from.read_line(&mut line).expect("read");
        serde_json::from_str::<serde_json::Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    for line in [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"crafted-test","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"explain","arguments":{}}}"#,
    ] {
        writeln!(to, "{line}").expect("write");
    }
    to.flush().expect("flush");
    assert!(answer()["result"].is_object(), "initialize");
    let called = answer();
    let text = called.to_string();
    assert_eq!(called["result"]["isError"], true, "{text}");
    assert!(text.contains("table sessions"), "{text}");
    assert!(text.contains("column started_ns"), "{text}");
    drop(to);
    let status = server.wait().expect("wait");
    assert!(status.code().is_some(), "ended by a signal: {status:?}");
}
