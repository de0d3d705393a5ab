//! Shared by the capture benches: the stand-in CUDA libraries and workload.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Directory holding `libcudart.so.13`, `libcuda.so.1` and `workload`:
/// `INGERO_STANDIN_DIR` when set (a machine without a compiler), else built
/// with `make -C tests/standin` under the target folder.
pub fn standin() -> PathBuf {
    if let Some(dir) = std::env::var_os("INGERO_STANDIN_DIR") {
        return PathBuf::from(dir);
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("standin-bench");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/standin");
    let ok = Command::new("make")
        .arg("-s")
        .arg("-C")
        .arg(root)
        .arg(format!("OUT={}", out.display()))
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "building the stand-in failed (needs make and a C compiler)"
    );
    out
}
