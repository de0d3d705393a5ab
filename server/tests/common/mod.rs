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
