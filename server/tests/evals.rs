//! Runs the evaluation harness (`evals/run.py`, official MCP Python SDK) in
//! tool mode against the freshly built `ingero` binary: every case in
//! `evals/cases/` must find its required facts in the MCP tool outputs and
//! none of its forbidden claims. Also runs the harness's own self-test,
//! which drives model mode end to end against a scripted stand-in model on
//! loopback (`evals/ingero_eval/scripted.py`): a zero-call answer scores 0,
//! figures count only from tool results, causes only at their stated rank.
//!
//! Needs a Python with the pinned packages of `tests/mcp/requirements.txt`:
//! `.venv/bin/python` at the repository root, or `INGERO_MCP_PYTHON`. Without
//! one the test is skipped with a message, unless `INGERO_MCP_E2E=require`.
//! No real model is run here; see `evals/README.md`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INGERO_MCP_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python");
    venv.exists().then_some(venv)
}

fn run(python: &Path, script: &str, extra: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let status = Command::new(python)
        .arg(root.join(script))
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_ingero"))
        .args(extra)
        .current_dir(&root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()));
    assert!(status.success(), "{script} failed ({status})");
}

#[test]
fn eval_cases_pass_in_tool_mode() {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let Some(python) = python() else {
        let msg = "no Python for the eval harness: python3 -m venv .venv && \
                   .venv/bin/pip install -r tests/mcp/requirements.txt";
        assert!(!required, "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    run(&python, "evals/test_harness.py", &[]);
    run(&python, "evals/run.py", &["--mode", "tool"]);
}
