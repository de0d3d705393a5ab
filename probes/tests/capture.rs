//! End-to-end capture of the stand-in workload, checked with SQL.

mod common;

use common::{one, read_pids};

use ingero_probes::{start, CaptureConfig, StopReason, Target};
use rusqlite::Connection;
use std::collections::HashMap;

const ITERS: i64 = 200;
const CALL_US: i64 = 100;
const SYNC_US: i64 = 300;

#[test]
fn captures_cuda_calls_and_host_events_of_a_launched_command() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("trace.db");
    let pids_file = tmp.path().join("pids");
    let argv: Vec<String> = [
        "env".to_string(),
        format!("INGERO_STANDIN_US={CALL_US}"),
        format!("INGERO_STANDIN_SYNC_US={SYNC_US}"),
        dir.join("workload").display().to_string(),
        "--iters".into(),
        ITERS.to_string(),
        "--workers".into(),
        "2".into(),
        "--worker-ms".into(),
        "400".into(),
        "--pids".into(),
        pids_file.display().to_string(),
    ]
    .into();
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(std::time::Duration::from_secs(30));
    let handle = start(cfg).expect("start");
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.command_exit, Some(0));
    assert_eq!(summary.status.drops, 0);
    let pids = read_pids(&pids_file);
    assert_eq!(pids.workers.len(), 2);

    let conn = Connection::open(&db).expect("open db");
    // Exact CUDA call counts for the traced process.
    let mut counts: HashMap<String, i64> = HashMap::new();
    let mut stmt = conn
        .prepare(
            "SELECT o.name, COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE c.pid = ?1 GROUP BY o.name",
        )
        .expect("prepare");
    for row in stmt
        .query_map([pids.parent], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })
        .expect("query")
    {
        let (name, n) = row.expect("row");
        counts.insert(name, n);
    }
    let expected: &[(&str, i64)] = &[
        ("cudaMalloc", 1),
        ("cudaMallocHost", 1),
        ("cudaHostAlloc", 1),
        ("cuMemAlloc_v2", 1),
        ("cudaMemcpyAsync", ITERS),
        ("cudaLaunchKernel", ITERS),
        ("cuLaunchKernel", ITERS),
        ("cudaStreamSynchronize", ITERS),
        ("cudaMemcpy", 2),
        ("cuMemcpyHtoDAsync_v2", 1),
        ("cuMemcpyDtoHAsync_v2", 1),
        ("cuStreamSynchronize", 1),
        ("cuCtxSynchronize", 1),
        ("cudaDeviceSynchronize", 1),
        ("cudaEventSynchronize", 1),
        ("cuMemFree_v2", 1),
        ("cudaFree", 1),
    ];
    for (name, n) in expected {
        assert_eq!(
            counts.get(*name).copied().unwrap_or(0),
            *n,
            "{name}: {counts:?}"
        );
    }
    assert_eq!(counts.len(), expected.len(), "{counts:?}");
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM cuda_calls WHERE pid != ?1",
            [pids.parent]
        ),
        0
    );

    // Durations follow the injected delays (the probes add ~1-3 us; preemption by
    // the workers can stretch single calls, so check minimum and median).
    let durations = |op: &str| -> Vec<i64> {
        let mut s = conn
            .prepare(
                "SELECT dur_ns FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
                 WHERE o.name = ?1 ORDER BY dur_ns",
            )
            .expect("prepare");
        let v: Vec<i64> = s
            .query_map([op], |r| r.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
        v
    };
    for (op, us) in [
        ("cudaLaunchKernel", CALL_US),
        ("cuLaunchKernel", CALL_US),
        ("cudaStreamSynchronize", SYNC_US),
    ] {
        let d = durations(op);
        let median = d[d.len() / 2];
        assert!(d[0] >= us * 1000, "{op}: min {} < {us} us", d[0]);
        assert!(median < us * 1000 + 50_000, "{op}: median {median} ns");
    }

    // Arguments: sizes, copy kinds, streams (including stack-passed ones).
    let arg_row = |op: &str| -> (i64, i64, i64) {
        conn.query_row(
            "SELECT bytes, copy_kind, stream FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.name = ?1 LIMIT 1",
            [op],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect(op)
    };
    assert_eq!(arg_row("cudaMemcpyAsync"), (4096, 1, 0x5157));
    assert_eq!(arg_row("cudaLaunchKernel"), (0, -1, 0x5157));
    assert_eq!(arg_row("cuLaunchKernel"), (0, -1, 0x5157));
    assert_eq!(arg_row("cudaStreamSynchronize"), (0, -1, 0x5157));
    assert_eq!(arg_row("cudaMalloc"), (1 << 20, -1, 0));
    assert_eq!(arg_row("cudaHostAlloc"), (16384, -1, 0));
    assert_eq!(arg_row("cuMemAlloc_v2"), (2 << 20, -1, 0));
    assert_eq!(arg_row("cuMemcpyHtoDAsync_v2"), (4096, 1, 0x5157));
    assert_eq!(arg_row("cuMemcpyDtoHAsync_v2"), (4096, 2, 0x5157));
    let kinds: String = conn
        .query_row(
            "SELECT group_concat(copy_kind, ',') FROM \
             (SELECT copy_kind FROM cuda_calls WHERE op_id = 4 ORDER BY ts_ns)",
            [],
            |r| r.get(0),
        )
        .expect("cudaMemcpy kinds");
    assert_eq!(kinds, "1,2");
    assert_eq!(
        one(
            &conn,
            "SELECT SUM(bytes) FROM cuda_calls WHERE op_id = 4",
            []
        ),
        2 * 8192
    );

    // Forks of the two workers, attributed to the parent.
    let forks: Vec<i64> = {
        let mut s = conn
            .prepare("SELECT arg FROM host_events WHERE kind = 4 AND pid = ?1 ORDER BY arg")
            .expect("prepare");
        let v: Vec<i64> = s
            .query_map([pids.parent], |r| r.get(0))
            .expect("query")
            .map(|r| r.expect("row"))
            .collect();
        v
    };
    let mut workers = pids.workers.clone();
    workers.sort();
    assert_eq!(forks, workers);

    for w in &pids.workers {
        // Each worker faults in 4 MiB (1024 pages) per round; the kernel
        // sends them as runs, each row counting its allocations.
        let pages = one(
            &conn,
            "SELECT COALESCE(SUM(count), 0) FROM host_events WHERE kind = 3 AND pid = ?1",
            [*w],
        );
        assert!(pages >= 1024, "worker {w}: {pages} page allocations");
        let switches = one(
            &conn,
            "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND pid = ?1 AND dur_ns > 0",
            [*w],
        );
        assert!(switches > 0, "worker {w}: no off-CPU intervals");
        assert_eq!(
            one(
                &conn,
                "SELECT arg FROM host_events WHERE kind = 6 AND pid = ?1",
                [*w]
            ),
            3,
            "worker exit code"
        );
        assert_eq!(
            one(&conn, "SELECT ppid FROM processes WHERE pid = ?1", [*w]),
            pids.parent
        );
    }
    // The parent competes with the workers on a small machine and waits for
    // them at the end: it goes off-CPU too.
    assert!(
        one(
            &conn,
            "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND pid = ?1",
            [pids.parent]
        ) > 0
    );
    // Nothing from outside the traced tree.
    let mut tree = pids.workers.clone();
    tree.push(pids.parent);
    let outside = one(
        &conn,
        &format!(
            "SELECT COUNT(*) FROM host_events WHERE pid NOT IN ({})",
            tree.iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        [],
    );
    assert_eq!(outside, 0, "events from untraced processes");

    // Aggregates count everything; sessions, processes and snapshots are filled in.
    assert_eq!(
        one(
            &conn,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 3",
            []
        ),
        ITERS
    );
    assert!(one(&conn, "SELECT COUNT(*) FROM system_snapshots", []) >= 1);
    assert_eq!(one(&conn, "SELECT COUNT(*) FROM capture_losses", []), 0);
    assert!(one(&conn, "SELECT stopped_ns - started_ns FROM sessions", []) > 0);
    assert!(
        one(
            &conn,
            "SELECT COUNT(*) FROM processes WHERE pid = ?1 AND comm = 'workload'",
            [pids.parent]
        ) == 1
    );
}

/// A caller sleeping in `wait_timeout` learns that the capture ended when it
/// ends, not when its timeout runs out: the traced command lives about
/// 300 ms, the wait allows 60 s.
#[test]
fn wait_timeout_returns_when_the_capture_ends() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("trace.db");
    let argv: Vec<String> = [
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "3".into(),
        "--wait-ms".into(),
        "300".into(),
    ]
    .into();
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(std::time::Duration::from_secs(120));
    let handle = start(cfg).expect("start");
    assert!(
        !handle.wait_timeout(std::time::Duration::from_millis(1)),
        "ended before the command could have"
    );
    let t0 = std::time::Instant::now();
    assert!(handle.wait_timeout(std::time::Duration::from_secs(60)));
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(30),
        "woke after {:?}",
        t0.elapsed()
    );
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
}
