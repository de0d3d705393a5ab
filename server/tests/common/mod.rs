//! Shared by the capture tests: the stand-in CUDA libraries and workload.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds `tests/standin` into `out` with make and returns the workload path.
pub fn build_standins(out: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/standin");
    let status = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(&src)
        .arg(format!("OUT={}", out.display()))
        .status()
        .expect("make (install make and a C compiler)");
    assert!(status.success(), "building the stand-in libraries failed");
    out.join("workload")
}

/// Runs `cmd` to its end; panics with its stderr, under `what`, when it
/// fails. (Not every test binary that shares this module calls it.)
#[allow(dead_code)]
pub fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `ingero explain --json --db DB`, parsed; panics with its stderr when it
/// fails. (Not every test binary that shares this module calls it.)
#[allow(dead_code)]
pub fn explain_json(db: &Path) -> serde_json::Value {
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["explain", "--json", "--db"])
            .arg(db),
        "ingero explain",
    );
    serde_json::from_slice(&out.stdout).expect("explain --json prints JSON")
}
