//! Shared by the tests that drive the server from Python (end-to-end, load,
//! fuzz): finds the interpreter with the pinned packages of
//! `tests/mcp/requirements.txt` and runs a script against the built binary.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

const HINT: &str = "python3 -m venv .venv && .venv/bin/pip install -r tests/mcp/requirements.txt";

/// Repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `INGERO_MCP_PYTHON`, else `.venv/bin/python` at the repository root, when
/// it can import `modules`. Otherwise the test is skipped with a message, or
/// fails when `INGERO_MCP_E2E=require` (as in CI).
pub fn python(what: &str, modules: &str) -> Option<PathBuf> {
    let required = std::env::var("INGERO_MCP_E2E").is_ok_and(|v| v == "require");
    let found = std::env::var_os("INGERO_MCP_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let venv = root().join(".venv/bin/python");
            venv.exists().then_some(venv)
        });
    let problem = match &found {
        None => format!("no Python for the {what}: {HINT}"),
        Some(p) => {
            let imports = Command::new(p)
                .args(["-c", &format!("import {modules}")])
                .status()
                .is_ok_and(|s| s.success());
            if imports {
                return found;
            }
            format!("{} cannot import {modules}: {HINT}", p.display())
        }
    };
    assert!(!required, "{problem}");
    eprintln!("skipped: {problem}");
    None
}

/// Runs `script` (relative to the repository root) with `args`, from the
/// repository root, and returns its exit status.
pub fn run_script(python: &Path, script: &str, args: &[&str]) -> ExitStatus {
    Command::new(python)
        .arg(root().join(script))
        .args(args)
        .current_dir(root())
        .status()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", python.display()))
}
