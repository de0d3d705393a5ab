//! Shared test helpers: builds the stand-in CUDA libraries and workload.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Directory holding `libcudart.so.13`, `libcuda.so.1` and `workload`,
/// built once per test binary with `make -C tests/standin`.
pub fn standin() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let out =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("standin-{}", std::process::id()));
        let status = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(root.join("tests/standin"))
            .arg(format!("OUT={}", out.display()))
            .status()
            .expect("run make (apt-get install make gcc)");
        assert!(status.success(), "building the stand-in libraries failed");
        out
    })
}

/// True when this process may load eBPF programs (tests that need it skip otherwise).
pub fn can_trace() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipping: needs root");
    }
    root
}
