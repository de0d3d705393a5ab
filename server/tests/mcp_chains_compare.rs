//! `get_causal_chains` with `compare_with` through the real MCP server over
//! stdio: the chain report of the run, then how it compares with the
//! baseline, the same comparison `compare_runs` answers (its verdict first,
//! the findings that moved most), in the text and in the structured
//! output, which still matches the tool's output schema.

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

fn call(server: &mut StdioServer, tool: &str, args: Value) -> Value {
    server.request("tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
}

fn text(r: &Value) -> &str {
    r["content"][0]["text"].as_str().expect("text")
}

#[test]
fn get_causal_chains_compares_with_a_baseline_when_asked() {
    let dir = tempfile::tempdir().expect("tempdir");
    demo(dir.path(), "dataloader-starvation");
    demo(dir.path(), "periodic-malloc-spike");
    let mut server = StdioServer::start([
        std::ffi::OsString::from("--db"),
        dir.path().join("periodic-malloc-spike.db").into_os_string(),
    ]);
    let tools = server.request("tools/list", json!({}));
    let tool = tools["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "get_causal_chains"))
        .cloned()
        .expect("get_causal_chains listed");
    let arg = &tool["inputSchema"]["properties"]["compare_with"];
    assert_eq!(arg["type"], "string", "{arg}");
    let schema = jsonschema::validator_for(&tool["outputSchema"]).expect("output schema compiles");

    let plain = call(&mut server, "get_causal_chains", json!({}));
    assert_ne!(plain["isError"], true, "{plain}");
    assert!(plain["structuredContent"].get("comparison").is_none());
    assert!(!text(&plain).contains("Compared with the baseline"));

    let base = "dataloader-starvation.db";
    let both = call(
        &mut server,
        "get_causal_chains",
        json!({"compare_with": base}),
    );
    assert_ne!(both["isError"], true, "{both}");
    let runs = call(
        &mut server,
        "compare_runs",
        json!({"base": base, "new": "periodic-malloc-spike.db"}),
    );
    let verdict = runs["structuredContent"]["verdict"]["sentence"]
        .as_str()
        .expect("verdict");
    assert!(verdict.starts_with("Better: dataloader_worker_contention is gone"));

    // The text: this run's chains as without the argument, then the comparison.
    let t = text(&both);
    let chains = text(&plain);
    assert!(t.starts_with(chains), "the chain report comes first");
    let added = &t[chains.len()..];
    assert!(
        added.starts_with(&format!(
            "\nCompared with the baseline {base} (each run's steady phase, as compare_runs):\n{verdict}\n"
        )),
        "{added}"
    );
    assert!(added.contains("dataloader_worker_contention"), "{added}");
    assert!(added.lines().count() <= 22, "a brief addition: {added}");

    // The structure: the same comparison compare_runs returns, under `comparison`.
    let s = &both["structuredContent"];
    assert_eq!(s["comparison"], runs["structuredContent"]);
    assert_eq!(s["headline"], plain["structuredContent"]["headline"]);
    let errors: Vec<String> = schema.iter_errors(s).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "output schema: {errors:?}");

    // A baseline that is not there: a tool error naming the argument.
    let bad = call(
        &mut server,
        "get_causal_chains",
        json!({"compare_with": "missing.db"}),
    );
    assert_eq!(bad["isError"], true, "{bad}");
    assert!(text(&bad).starts_with("compare_with: "), "{bad}");

    // `db` names the run, `compare_with` its baseline.
    let named = call(
        &mut server,
        "get_causal_chains",
        json!({"db": base, "compare_with": base, "detail": "full"}),
    );
    assert_eq!(
        named["structuredContent"]["comparison"]["verdict"]["outcome"],
        "no_change"
    );
    let status = server.finish();
    assert!(status.success(), "{status}");
}
