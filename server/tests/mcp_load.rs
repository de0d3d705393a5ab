//! Short HTTP load test of `ingero mcp --http`: runs `tests/mcp/load_http.py`
//! against the freshly built binary with 64 concurrent sessions making mixed
//! calls for a bounded time. The script fails on any unsuccessful response,
//! on sessions that outlive their DELETE, and on RSS growth after warm-up
//! beyond its bound; it asserts nothing about speed.
//!
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Seconds of load; long enough for sessions to be recycled many times.
const SECONDS: &str = "16";
/// Sessions live at once.
const SESSIONS: &str = "64";

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INGERO_MCP_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    venv.exists().then_some(venv)
}

#[test]
fn http_server_under_64_sessions_of_mixed_calls() {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let Some(python) = python() else {
        let msg = "no Python for the MCP load test: python3 -m venv .venv && \
                   .venv/bin/pip install -r tests/mcp/requirements.txt";
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(&python)
        .arg(root.join("tests/mcp/load_http.py"))
        .args(["--bin", env!("CARGO_BIN_EXE_ingero")])
        .args(["--sessions", SESSIONS, "--seconds", SECONDS])
        .arg("--db")
        .arg(root.join("tests/data/ingero-investigations/pytorch-dataloader-starvation.db"))
        .current_dir(&root)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(status.success(), "MCP HTTP load test failed ({status})");
}
