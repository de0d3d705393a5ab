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

/// The stand-in runtime and driver libraries, the list most captures in
/// these tests probe (`CaptureConfig::libraries`).
pub fn standin_libraries() -> Vec<PathBuf> {
    let dir = standin();
    vec![dir.join("libcudart.so.13"), dir.join("libcuda.so.1")]
}

/// Environment switch: `INGERO_EBPF_TESTS=require` (as in CI) makes the eBPF
/// tests fail where they cannot run instead of skipping.
pub const EBPF_TESTS: &str = "INGERO_EBPF_TESTS";

/// Whether the eBPF tests run: `Ok(true)` as root, `Ok(false)` (skip)
/// otherwise, and `Err` with what to do when `env` (the value of
/// [`EBPF_TESTS`]) is `require` and they cannot run.
pub fn decide(root: bool, env: Option<&str>) -> Result<bool, String> {
    match (root, env) {
        (true, _) => Ok(true),
        (false, Some("require")) => Err(format!(
            "the eBPF tests need root (or CAP_BPF+CAP_PERFMON) and {EBPF_TESTS}=require is \
             set: run them as root (sudo -E cargo test), or unset {EBPF_TESTS} to skip them"
        )),
        (false, _) => Ok(false),
    }
}

/// True when this process may load eBPF programs; tests that need it skip
/// otherwise, or fail (panic) when `INGERO_EBPF_TESTS=require`.
pub fn can_trace() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let env = std::env::var(EBPF_TESTS).ok();
    match decide(root, env.as_deref()) {
        Ok(true) => true,
        Ok(false) => {
            eprintln!("skipping: needs root (set {EBPF_TESTS}=require to fail instead)");
            false
        }
        Err(problem) => panic!("{problem}"),
    }
}

/// The single integer `sql` selects from `conn` (a test's expected value
/// checked against the file).
pub fn one(conn: &rusqlite::Connection, sql: &str, args: impl rusqlite::Params) -> i64 {
    conn.query_row(sql, args, |r| r.get(0)).expect(sql)
}

/// The pids a workload wrote with `--pids FILE`.
pub struct Pids {
    /// The workload itself.
    pub parent: i64,
    /// Its forked workers.
    pub workers: Vec<i64>,
}

/// Reads the `--pids FILE` of a workload run.
pub fn read_pids(path: &Path) -> Pids {
    let text = std::fs::read_to_string(path).expect("pids file");
    let mut parent = 0;
    let mut workers = Vec::new();
    for line in text.lines() {
        let (k, v) = line.split_once(' ').expect("pid line");
        let v: i64 = v.parse().expect("pid");
        if k == "parent" {
            parent = v;
        } else {
            workers.push(v);
        }
    }
    Pids { parent, workers }
}
