//! Faults during capture, as root: a database on a file system that fills up
//! mid-capture keeps everything written before, and the capture says so.

mod common;

use common::build_standins;
use std::path::Path;
use std::process::Command;

struct Mount<'a>(&'a Path);

impl Drop for Mount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn disk_full_keeps_earlier_batches_and_reports_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"])
        .arg(&small)
        .status()
        .expect("mount (run as root)");
    assert!(
        mounted.success(),
        "mounting a 3 MiB tmpfs failed (run as root)"
    );
    let _unmount = Mount(&small);
    let db = small.join("full.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "0")
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .arg("--")
        .arg(&workload)
        // CUDA calls alone, fast, once the probes are in place (the workload
        // waits a second after loading the libraries): several 200 ms
        // batches commit before the 3 MiB file system fills.
        .args(["--iters", "300000", "--wait-ms", "1000"])
        .output()
        .expect("run ingero trace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    // What was committed before the disk filled is readable and analysable.
    let trace = ingero_store::TraceDb::open(&db).expect("readable after disk full");
    let calls: i64 = trace
        .conn()
        .query_row("SELECT COUNT(*) FROM cuda_calls", [], |r| r.get(0))
        .expect("count");
    assert!(calls > 0);
    let explained = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--db"])
        .arg(&db)
        .output()
        .expect("explain");
    assert!(explained.status.success());
}
