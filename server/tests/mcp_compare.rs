//! `compare_runs` through the real MCP server over stdio (plain JSON-RPC
//! lines, as any client sends them): two demo captures in the allowed
//! folder, named as the other tools take `db`; the text answer leads with
//! the verdict and the structured output carries the comparison.

mod stdio_client;

use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use stdio_client::StdioServer;

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

/// `tools/call` of compare_runs: its result.
fn call(server: &mut StdioServer, args: Value) -> Value {
    server.request(
        "tools/call",
        json!({"name": "compare_runs", "arguments": args}),
    )["result"]
        .clone()
}

#[test]
fn compare_runs_answers_through_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo(dir.path(), "dataloader-starvation");
    demo(dir.path(), "periodic-malloc-spike");
    let mut server = StdioServer::start([
        std::ffi::OsString::from("--db"),
        dir.path().join("dataloader-starvation.db").into_os_string(),
    ]);
    let tools = server.request("tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "compare_runs"))
        .cloned()
        .expect("compare_runs listed");
    assert_eq!(tool["inputSchema"]["required"], json!(["base", "new"]));
    assert!(tool["outputSchema"].is_object());

    let r = call(
        &mut server,
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
        &mut server,
        json!({"base": "dataloader-starvation.db", "new": "dataloader-starvation.db", "detail": "full"}),
    );
    let text = same["content"][0]["text"].as_str().expect("text");
    assert!(text.starts_with("No change"), "{text}");
    assert!(text.contains("idle split"), "full detail: {text}");
    assert_eq!(same["structuredContent"]["verdict"]["outcome"], "no_change");

    let bad = call(
        &mut server,
        json!({"base": "missing.db", "new": "dataloader-starvation.db"}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    let missing = call(&mut server, json!({"base": "dataloader-starvation.db"}));
    assert_eq!(missing["isError"], true, "new is required: {missing}");
    let status = server.finish();
    assert!(status.success(), "{status}");
}
