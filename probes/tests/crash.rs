//! A capture killed with SIGKILL leaves a readable database holding every
//! batch committed before the kill.

mod common;

use ingero_probes::{start, CaptureConfig, Target};
use ingero_store::TraceDb;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const ROLE: &str = "INGERO_TEST_CRASH_DB";

/// Capture half, run in a re-executed copy of this binary; never returns normally.
#[test]
fn child_capture() {
    let Ok(db) = std::env::var(ROLE) else {
        return;
    };
    let dir = common::standin();
    let argv = vec![
        "env".to_string(),
        "INGERO_STANDIN_US=200".into(),
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "15000".into(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), PathBuf::from(db));
    cfg.libraries = common::standin_libraries();
    let handle = start(cfg).expect("start");
    println!("CAPTURING");
    let _ = handle.wait();
}

#[test]
fn sigkilled_capture_leaves_a_readable_database() {
    if !common::can_trace() {
        return;
    }
    common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("killed.db");
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .args([
            "--exact",
            "child_capture",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, &db)
        .spawn()
        .expect("spawn capture");
    // Let it record for a while (batches commit every ~200 ms).
    let t0 = Instant::now();
    while !db.exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2500));
    child.kill().expect("SIGKILL");
    let _ = child.wait();

    let trace = TraceDb::open(&db).expect("killed capture's database opens");
    let conn = trace.conn();
    let calls: i64 = conn
        .query_row("SELECT COUNT(*) FROM cuda_calls", [], |r| r.get(0))
        .expect("count");
    let agg: i64 = conn
        .query_row(
            "SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 1",
            [],
            |r| r.get(0),
        )
        .expect("aggregates");
    let targets: String = conn
        .query_row("SELECT target_pids FROM sessions", [], |r| r.get(0))
        .expect("session");
    // The traced workload outlives the killed capture; end it.
    if let Ok(pids) = serde_json::from_str::<Vec<i32>>(&targets) {
        for p in pids {
            // SAFETY: signalling the workload this test started.
            unsafe { libc::kill(p, libc::SIGKILL) };
        }
    }
    assert!(calls > 100, "only {calls} calls survived");
    assert_eq!(agg, calls, "aggregates and raw rows disagree");
}
