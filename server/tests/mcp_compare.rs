//! `compare_runs` through the real MCP server over stdio (plain JSON-RPC
//! lines, as any client sends them): two demo captures in the allowed
//! folder, named as the other tools take `db`; the text answer leads with
//! the verdict and the structured output carries the comparison.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

fn demo(dir: &Path, scenario: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["demo", scenario, "--db"])
        .arg(dir.join(format!("{scenario}.db")))
        .output()
        .expect("run ingero demo");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn send(to: &mut ChildStdin, message: &Value) {
    writeln!(to, "{message}").expect("write to the server");
    to.flush().expect("flush");
}

/// The next answer carrying `id` (notifications such as progress skipped).
fn answer(from: &mut BufReader<ChildStdout>, id: i64) -> Value {
    loop {
        let mut line = String::new();
        let n = from.read_line(&mut line).expect("read the server's answer");
        assert!(n > 0, "the server closed its output");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["id"] == id {
            return v;
        }
    }
}

fn call(to: &mut ChildStdin, from: &mut BufReader<ChildStdout>, id: i64, args: Value) -> Value {
    send(
        to,
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "compare_runs", "arguments": args}}),
    );
    answer(from, id)["result"].clone()
}

#[test]
fn compare_runs_answers_through_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo(dir.path(), "dataloader-starvation");
    demo(dir.path(), "periodic-malloc-spike");
    let mut server = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["mcp", "--db"])
        .arg(dir.path().join("dataloader-starvation.db"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ingero mcp");
    let mut to = server.stdin.take().expect("stdin");
    let mut from = BufReader::new(server.stdout.take().expect("stdout"));
    send(
        &mut to,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "compare-test", "version": "1"}}}),
    );
    assert!(answer(&mut from, 1)["result"].is_object(), "initialize");
    send(
        &mut to,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    send(
        &mut to,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    );
    let tools = answer(&mut from, 2);
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "compare_runs"))
        .cloned()
        .expect("compare_runs listed");
    assert_eq!(tool["inputSchema"]["required"], json!(["base", "new"]));
    assert!(tool["outputSchema"].is_object());

    let r = call(
        &mut to,
        &mut from,
        3,
        json!({"base": "dataloader-starvation.db", "new": "periodic-malloc-spike.db"}),
    );
    assert_ne!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().expect("text");
    assert!(
        text.starts_with("Better: dataloader_worker_contention is gone"),
        "{text}"
    );
    let s = &r["structuredContent"];
    assert_eq!(s["verdict"]["reduced"], "dataloader_worker_contention");
    assert_eq!(s["window"], "steady");
    assert!(s["findings"].as_array().is_some_and(|f| !f.is_empty()));

    let same = call(
        &mut to,
        &mut from,
        4,
        json!({"base": "dataloader-starvation.db", "new": "dataloader-starvation.db", "detail": "full"}),
    );
    let text = same["content"][0]["text"].as_str().expect("text");
    assert!(text.starts_with("No change"), "{text}");
    assert!(text.contains("idle split"), "full detail: {text}");
    assert_eq!(same["structuredContent"]["verdict"]["outcome"], "no_change");

    let bad = call(
        &mut to,
        &mut from,
        5,
        json!({"base": "missing.db", "new": "dataloader-starvation.db"}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    let missing = call(
        &mut to,
        &mut from,
        6,
        json!({"base": "dataloader-starvation.db"}),
    );
    assert_eq!(missing["isError"], true, "new is required: {missing}");
    drop(to);
    let status = server.wait().expect("server exits");
    assert!(status.success(), "{status}");
}
