//! As root, end to end: a capture started with the MCP `start_trace` tool
//! is finalised however the server ends: the stdio client closing its pipe
//! (the usual way an assistant ends a session), SIGTERM, SIGHUP, SIGINT.
//! The database then has its stop time and reason, no WAL left over, and
//! every CUDA call the last `get_trace_status` counted (by SQL). Plain JSON-RPC lines over stdio, as any client
//! sends them.

mod common;

use common::{build_standins, can_trace};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The stand-in job, libraries loaded, held until a line on its stdin.
fn job(workload: &Path) -> Child {
    let lib_dir = workload.parent().expect("lib dir");
    let child = Command::new(workload)
        .env("INGERO_STANDIN_US", "100")
        .arg("--stdin")
        .arg("--lib-dir")
        .arg(lib_dir)
        .args(["--iters", "100000000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the stand-in job");
    let maps = format!("/proc/{}/maps", child.id());
    let t0 = Instant::now();
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("libcuda.so.1")) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the job never loaded libcuda.so.1"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn send(to: &mut ChildStdin, line: &str) {
    writeln!(to, "{line}").expect("write to the server");
    to.flush().expect("flush");
}

fn answer(from: &mut BufReader<ChildStdout>) -> serde_json::Value {
    let mut line = String::new();
    from.read_line(&mut line).expect("read the server's answer");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

/// Starts `ingero mcp --allow-capture`, a capture of `pid` into
/// `dir/name`, and returns the server with its pipes.
fn server_capturing(
    dir: &Path,
    pid: u32,
    name: &str,
) -> (Child, ChildStdin, BufReader<ChildStdout>) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["mcp", "--allow-capture", "--allow-dir"])
        .arg(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ingero mcp");
    let mut to = server.stdin.take().expect("stdin");
    let mut from = BufReader::new(server.stdout.take().expect("stdout"));
    send(
        &mut to,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"endings-test","version":"1"}}}"#,
    );
    assert!(answer(&mut from)["result"].is_object(), "initialize");
    send(
        &mut to,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    send(
        &mut to,
        &serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "start_trace", "arguments": {"pid": pid, "duration": "5m", "output": name}}
        })
        .to_string(),
    );
    let started = answer(&mut from);
    assert_eq!(
        started["result"]["isError"],
        serde_json::Value::Bool(false),
        "start_trace: {started}"
    );
    (server, to, from)
}

fn wait_exit(server: &mut Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(status) = server.try_wait().expect("wait") {
            return status;
        }
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = server.kill();
            panic!("the server did not exit within 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn every_ending_of_the_server_finalises_its_capture() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    for ending in ["eof", "TERM", "HUP", "INT"] {
        let mut job = job(&workload);
        let name = format!("ended-by-{ending}.db");
        let (mut server, mut to, from) = server_capturing(dir.path(), job.id(), &name);
        // The job starts its loop; the capture records it for a while.
        let mut job_in = job.stdin.take().expect("job stdin");
        writeln!(job_in, "go").expect("start the job");
        std::thread::sleep(Duration::from_millis(2000));
        // The last status the client saw: the file must hold every call it counted.
        send(
            &mut to,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_trace_status","arguments":{}}}"#,
        );
        let mut from = from;
        let status = answer(&mut from);
        let counted = status["result"]["structuredContent"]["cuda_calls"]
            .as_i64()
            .unwrap_or_else(|| panic!("{ending}: status without cuda_calls: {status}"));
        assert!(counted > 0, "{ending}: the status counted no CUDA call");
        if ending == "eof" {
            drop(to);
        } else {
            let sent = Command::new("kill")
                .args([format!("-{ending}"), server.id().to_string()])
                .status()
                .expect("kill");
            assert!(sent.success());
            to.flush().ok();
        }
        let status = wait_exit(&mut server);
        drop(from);
        let _ = job.kill();
        let _ = job.wait();
        assert!(status.success(), "{ending}: the server exited {status:?}");
        common::assert_finalised(&dir.path().join(&name), ending);
        // The file says which ending it was.
        let expected = match ending {
            "eof" => "MCP client disconnected (stdin closed)".to_string(),
            signal => format!("server shutting down (SIG{signal})"),
        };
        let said: String = rusqlite::Connection::open_with_flags(
            dir.path().join(&name),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .and_then(|c| c.query_row("SELECT stop_reason FROM sessions", [], |r| r.get(0)))
        .expect("read the session");
        assert_eq!(said, expected, "{ending}");
        let stored: i64 = rusqlite::Connection::open_with_flags(
            dir.path().join(&name),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .and_then(|c| {
            c.query_row(
                "SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 1",
                [],
                |r| r.get(0),
            )
        })
        .expect("count the stored calls");
        assert!(
            stored >= counted,
            "{ending}: the file holds {stored} CUDA calls, the last status counted {counted}"
        );
    }
}
