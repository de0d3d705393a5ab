//! Shared by the capture tests: the stand-in CUDA libraries and workload.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Builds `tests/standin` into `out` with make and returns the workload path.
#[allow(dead_code)]
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

/// True as root; otherwise skip, or fail under `INGERO_EBPF_TESTS=require`.
#[allow(dead_code)]
pub fn can_trace() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    if root {
        return true;
    }
    if std::env::var("INGERO_EBPF_TESTS").as_deref() == Ok("require") {
        panic!("this test needs root and INGERO_EBPF_TESTS=require is set");
    }
    eprintln!("skipping: needs root");
    false
}

/// Checks that a capture was finalised: a stop time, no WAL left beside the
/// file, and CUDA calls counted in it. `what` names the case in messages.
#[allow(dead_code)]
pub fn assert_finalised(db: &Path, what: &str) {
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    assert!(
        std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) == 0,
        "{what}: WAL left behind"
    );
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the capture");
    let (stopped, calls): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT MAX(stopped_ns) FROM sessions), \
             (SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 1)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("sql");
    assert!(stopped > 0, "{what}: no stop time");
    assert!(calls > 0, "{what}: no CUDA call in the file");
}
