//! Runs the MCP end-to-end test (`tests/mcp/test_mcp.py`, official Python
//! SDK) against the freshly built `ingero` binary, over stdio and HTTP.
//!
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INGERO_MCP_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    venv.exists().then_some(venv)
}

#[test]
fn mcp_end_to_end_with_the_python_sdk() {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let Some(python) = python() else {
        let msg = "no Python for the MCP e2e test: python3 -m venv .venv && \
                   .venv/bin/pip install -r tests/mcp/requirements.txt";
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(&python)
        .arg(root.join("tests/mcp/test_mcp.py"))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_ingero"))
        .current_dir(&root)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(status.success(), "MCP end-to-end test failed ({status})");
}
