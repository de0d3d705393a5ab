//! Fuzzes tool arguments, prompt arguments and resource URIs through the
//! real MCP edge: runs `tests/mcp/fuzz_tool_args.py` (hypothesis and the
//! official Python SDK) against the freshly built `ingero` binary, so every
//! `cargo test` checks that hostile or malformed arguments get a clean error
//! or a schema-valid result, never a panic, a hang or a path outside the
//! allowed folder.
//!
//! A short run by default; `INGERO_FUZZ_EXAMPLES=5000` for a long one.
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

/// True when `python` can import what the fuzzer needs.
fn has_packages(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import hypothesis, jsonschema, mcp"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn fuzz_tool_arguments_through_mcp() {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let hint = "python3 -m venv .venv && .venv/bin/pip install -r tests/mcp/requirements.txt";
    let Some(python) = python() else {
        let msg = format!("no Python for the MCP fuzz test: {hint}");
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    if !has_packages(&python) {
        let msg = format!(
            "{} lacks hypothesis/jsonschema/mcp: {hint}",
            python.display()
        );
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(&python)
        .arg(root.join("tests/mcp/fuzz_tool_args.py"))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_ingero"))
        .current_dir(&root)
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(
        status.success(),
        "the MCP argument fuzzer found a defect ({status}); its output above names the example"
    );
}
