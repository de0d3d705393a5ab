//! Library discovery during capture: libraries loaded after the capture
//! started (dlopen from a Python-wheel layout) and libraries found in the
//! memory maps of a process traced by pid.

mod common;

use ingero_probes::{start, CaptureConfig, StopReason, Target, WarningKind};
use rusqlite::Connection;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Copies the stand-in into `root/venv/.../site-packages/nvidia/cu13/lib`.
fn wheel_layout(root: &Path) -> PathBuf {
    let lib = root.join("venv/lib/python3.12/site-packages/nvidia/cu13/lib");
    std::fs::create_dir_all(&lib).expect("mkdir");
    for f in ["libcudart.so.13", "libcuda.so.1", "workload"] {
        std::fs::copy(common::standin().join(f), lib.join(f)).expect("copy");
    }
    lib
}

fn count(db: &Path, sql: &str) -> i64 {
    let conn = Connection::open(db).expect("open");
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn picks_up_a_library_dlopened_after_exec() {
    dlopened_library(true);
}

/// Without multi-uprobe links (kernels before 6.6, or forced here), the
/// loader watch cannot be linked: the mmap syscall tracepoints find the
/// library instead, and the capture says what that costs.
#[test]
fn picks_up_a_dlopened_library_without_multi_uprobe_links() {
    dlopened_library(false);
}

fn dlopened_library(multi_uprobes: bool) {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let lib = wheel_layout(tmp.path());
    let db = tmp.path().join("t.db");
    // `env` execs the workload, which sleeps (so every look at its memory
    // map made at its start is over), dlopens the wheel copies, waits for
    // the capture to probe them, then calls: only a watch on the loads
    // themselves can find them.
    let argv = vec![
        "env".to_string(),
        "INGERO_STANDIN_US=10".into(),
        lib.join("workload").display().to_string(),
        "--iters".into(),
        "50".into(),
        "--delay-load-ms".into(),
        "600".into(),
        "--wait-ms".into(),
        "300".into(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.duration = Some(Duration::from_secs(30));
    cfg.multi_uprobes = multi_uprobes;
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.command_exit, Some(0));
    // With multi-uprobe links, found through the loader's hook, not the
    // mmap syscall tracepoints (which slow every system call on the host).
    let on_syscalls = summary
        .status
        .warnings
        .iter()
        .any(|w| w.kind == WarningKind::MmapWatchOnSyscallTracepoints);
    assert_eq!(on_syscalls, !multi_uprobes, "{:?}", summary.status.warnings);
    let libs = summary.status.libraries.join(" ");
    assert!(
        libs.contains("site-packages/nvidia/cu13/lib/libcudart.so.13"),
        "{libs}"
    );
    assert!(
        libs.contains("site-packages/nvidia/cu13/lib/libcuda.so.1"),
        "{libs}"
    );
    // Counted in the aggregates (launch rows keep few launches as raw rows).
    assert_eq!(
        count(
            &db,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 3"
        ),
        50
    );
    assert_eq!(
        count(
            &db,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 101"
        ),
        50
    );
    assert!(count(&db, "SELECT COUNT(*) FROM host_events WHERE kind = 5") >= 1);
}

#[test]
fn traces_a_running_process_by_pid() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let lib = wheel_layout(tmp.path());
    let db = tmp.path().join("t.db");
    let pids_file = tmp.path().join("pids");
    let mut child = Command::new(lib.join("workload"))
        .args([
            "--iters",
            "40",
            "--workers",
            "1",
            "--worker-ms",
            "100",
            "--stdin",
            "--pids",
        ])
        .arg(&pids_file)
        .env("INGERO_STANDIN_US", "10")
        .stdin(Stdio::piped())
        .spawn()
        .expect("workload");
    let pid = child.id() as i32;
    // Wait until the libraries are mapped.
    let t0 = Instant::now();
    while !std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .unwrap_or_default()
        .contains("libcuda.so.1")
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "workload never loaded its libraries"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut cfg = CaptureConfig::new(Target::Pid(pid), &db);
    cfg.duration = Some(Duration::from_secs(30));
    let handle = start(cfg).expect("start");
    let status = handle.status();
    assert_eq!(status.libraries.len(), 2, "{:?}", status.libraries);
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("write");
    let exit = child.wait().expect("wait");
    assert!(exit.success());
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(
        count(
            &db,
            // Every call counted (fast ones are folded in the kernel: no raw row).
            &format!(
                "SELECT SUM(count) FROM aggregates WHERE pid = {pid} AND source = 1 AND code = 7"
            )
        ),
        40
    );
    // The worker forked after the capture started is followed too.
    let text = std::fs::read_to_string(&pids_file).expect("pids");
    let worker: i64 = text
        .lines()
        .find_map(|l| l.strip_prefix("worker "))
        .and_then(|v| v.parse().ok())
        .expect("worker pid");
    assert_eq!(
        count(
            &db,
            &format!("SELECT COUNT(*) FROM host_events WHERE kind = 4 AND arg = {worker}")
        ),
        1
    );
    assert!(
        count(
            &db,
            &format!("SELECT COUNT(*) FROM host_events WHERE kind = 3 AND pid = {worker}")
        ) > 0
    );
}
