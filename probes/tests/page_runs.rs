//! Page allocations are counted in the kernel and sent as runs: a process
//! faulting in memory as fast as it can, beside CPU/memory hogs, loses
//! neither its allocations nor the CUDA calls around them, even with a small
//! ring buffer. Expected values come from the workload's construction
//! (`--touch-pages N` faults in N fresh 4 KiB pages; the loop makes exactly
//! ITERS of each call), checked with SQL on the file.

mod common;

use common::{one, read_pids};

use ingero_probes::{start, CaptureConfig, StopReason, Target};
use rusqlite::Connection;

const ITERS: i64 = 300;
const TOUCHED: i64 = 100_000;

#[test]
fn a_page_storm_is_counted_whole_and_crowds_out_no_cuda_call() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("trace.db");
    let pids_file = tmp.path().join("pids");
    let argv: Vec<String> = [
        "env".to_string(),
        "INGERO_STANDIN_US=50".to_string(),
        dir.join("workload").display().to_string(),
        "--wait-ms".into(),
        "300".into(),
        "--iters".into(),
        ITERS.to_string(),
        "--touch-pages".into(),
        TOUCHED.to_string(),
        "--workers".into(),
        "3".into(),
        "--worker-ms".into(),
        "1500".into(),
        "--pids".into(),
        pids_file.display().to_string(),
    ]
    .into();
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(std::time::Duration::from_secs(30));
    // 64 KiB holds about 1,600 host records: one record per page would
    // overflow it many times over.
    cfg.ring_bytes = 64 * 1024;
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.command_exit, Some(0));
    assert_eq!(summary.status.drops, 0, "{:?}", summary.status.losses);

    let parent = read_pids(&pids_file).parent;
    let conn = Connection::open(&db).expect("open db");
    assert_eq!(one(&conn, "SELECT COUNT(*) FROM capture_losses", []), 0);

    // Every CUDA call of the loop is there.
    for op in ["cudaMemcpyAsync", "cudaLaunchKernel", "cuLaunchKernel"] {
        assert_eq!(
            one(
                &conn,
                "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
                 WHERE c.pid = ?1 AND o.name = ?2",
                rusqlite::params![parent, op],
            ),
            ITERS,
            "{op}"
        );
    }

    // The touched pages, plus what the process allocates otherwise (page
    // tables, library data: a few hundred pages here).
    let allocs = one(
        &conn,
        "SELECT SUM(count) FROM host_events WHERE kind = 3 AND pid = ?1",
        [parent],
    );
    assert!(
        (TOUCHED..TOUCHED + TOUCHED / 20 + 2_000).contains(&allocs),
        "{allocs} page allocations for {TOUCHED} pages touched"
    );
    let bytes = one(
        &conn,
        "SELECT SUM(bytes) FROM host_events WHERE kind = 3 AND pid = ?1",
        [parent],
    );
    assert!(bytes >= TOUCHED * 4096, "{bytes} bytes");
    // Coalesced: far fewer rows than allocations, each run at most 1 ms
    // long and of one thread.
    let rows = one(
        &conn,
        "SELECT COUNT(*) FROM host_events WHERE kind = 3 AND pid = ?1",
        [parent],
    );
    assert!(rows * 20 < allocs, "{rows} rows for {allocs} allocations");
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM host_events WHERE kind = 3 AND (dur_ns < 0 OR dur_ns >= 1000000 \
             OR count < 1 OR bytes < 4096 * count)",
            [],
        ),
        0
    );
    // A run is stamped with the clock at its first allocation and at least
    // every 8th after it (and at each new kernel tick), so a run of 16
    // allocations or more ends later than it starts.
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM host_events WHERE kind = 3 AND pid = ?1 AND count >= 16 \
             AND dur_ns = 0",
            [parent],
        ),
        0
    );
    // The per-second totals count every allocation, all of them kept.
    for pid_rows in [
        "SELECT SUM(count) FROM host_events WHERE kind = 3",
        "SELECT SUM(count) FROM aggregates WHERE source = 2 AND code = 3",
        "SELECT SUM(stored) FROM aggregates WHERE source = 2 AND code = 3",
    ] {
        assert_eq!(
            one(&conn, pid_rows, []),
            one(
                &conn,
                "SELECT SUM(count) FROM host_events WHERE kind = 3",
                []
            ),
            "{pid_rows}"
        );
    }
    assert_eq!(
        one(
            &conn,
            "SELECT SUM(sum_bytes) FROM aggregates WHERE source = 2 AND code = 3",
            []
        ),
        one(
            &conn,
            "SELECT SUM(bytes) FROM host_events WHERE kind = 3",
            []
        )
    );
}
