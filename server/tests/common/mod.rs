//! Shared by the capture tests: the stand-in CUDA libraries and workload.

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// `ingero explain --json --db DB`, parsed; panics with its stderr when it
/// fails. (Not every test binary that shares this module calls it.)
#[allow(dead_code)]
pub fn explain_json(db: &Path) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--json", "--db"])
        .arg(db)
        .output()
        .expect("run ingero explain");
    assert!(
        out.status.success(),
        "explain failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("explain --json prints JSON")
}
