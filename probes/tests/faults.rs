//! Faults around a running capture, each checked on the database it leaves:
//! a traced process killed inside a CUDA call, a thread ending inside one, a
//! call still running when the capture stops, a ring buffer too small for the
//! event rate, a CUDA library unloaded and loaded again by the traced
//! process, and a probed library file deleted from disk.

mod common;

use common::{one, read_pids};

use ingero_probes::{render, start, CaptureConfig, CaptureSummary, StopReason, Target};
use ingero_store::catalog::{loss_source, unfinished};
use ingero_store::TraceDb;
use rusqlite::Connection;
use std::path::Path;
use std::time::Duration;

/// Runs `workload ARGS` under a capture with the given stand-in delays.
fn capture(
    db: &Path,
    env: &[(&str, &str)],
    args: &[&str],
    tune: impl FnOnce(&mut CaptureConfig),
) -> CaptureSummary {
    let dir = common::standin();
    let mut argv = vec!["env".to_string()];
    argv.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
    argv.push(dir.join("workload").display().to_string());
    argv.extend(args.iter().map(|a| a.to_string()));
    let mut cfg = CaptureConfig::new(Target::Command(argv), db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(Duration::from_secs(60));
    tune(&mut cfg);
    start(cfg).expect("start").wait().expect("capture")
}

fn losses(conn: &Connection, source: &str) -> i64 {
    one(
        conn,
        "SELECT COALESCE(SUM(lost), 0) FROM capture_losses WHERE source = ?1",
        [source],
    )
}

/// The finished file opens as a complete native trace.
fn readable(db: &Path) {
    let trace = TraceDb::open(db).expect("database opens read-only");
    assert!(trace.span().end_ns > trace.span().start_ns);
}

#[test]
fn a_process_killed_inside_a_call_leaves_that_call_timed_to_the_exit() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("killed.db");
    // Every synchronize spins for 20 s; SIGALRM kills the process 600 ms in,
    // inside the first cudaStreamSynchronize.
    let summary = capture(
        &db,
        &[
            ("INGERO_STANDIN_US", "0"),
            ("INGERO_STANDIN_SYNC_US", "20000000"),
        ],
        &["--iters", "3", "--alarm-ms", "600"],
        |_| {},
    );
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.command_exit, Some(128 + libc::SIGALRM));
    assert_eq!(summary.status.drops, 0, "{:?}", summary.status.losses);
    assert_eq!(summary.status.unfinished_calls, 1);
    let text = render::summary(&summary);
    assert!(text.contains("1 CUDA calls never returned"), "{text}");

    let conn = Connection::open(&db).expect("open");
    let (op, ret, dur): (String, i64, i64) = conn
        .query_row(
            "SELECT o.name, c.ret, c.dur_ns FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE c.ret < 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("one unfinished call");
    assert_eq!(op, "cudaStreamSynchronize");
    assert_eq!(ret, unfinished::THREAD_EXITED);
    assert!(
        (300_000_000..10_000_000_000).contains(&dur),
        "duration to the kill: {dur} ns"
    );
    assert_eq!(losses(&conn, loss_source::UNFINISHED_CALL), 1);
    assert_eq!(losses(&conn, loss_source::OPEN_AT_STOP), 0);
    // The kill itself is recorded: exit status 128 + SIGALRM.
    assert_eq!(
        one(
            &conn,
            "SELECT arg FROM host_events WHERE kind = 6 ORDER BY ts_ns DESC LIMIT 1",
            []
        ),
        i64::from(128 + libc::SIGALRM)
    );
    // Everything before the kill was stored: 4 allocations, then one launch
    // pair and a copy of the first iteration.
    assert_eq!(
        one(&conn, "SELECT COUNT(*) FROM cuda_calls WHERE ret = 0", []),
        7
    );
    readable(&db);
}

#[test]
fn a_call_still_running_at_the_stop_is_recorded_as_open() {
    call_open_at_stop(true);
}

/// Per-function links take seconds to detach (one grace period each): a
/// call returning meanwhile is still the open call it was at the stop.
#[test]
fn a_call_open_at_the_stop_stays_open_through_a_slow_detach() {
    call_open_at_stop(false);
}

fn call_open_at_stop(multi_uprobes: bool) {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("open.db");
    let pids = tmp.path().join("pids");
    let dir = common::standin();
    let argv = vec![
        "env".to_string(),
        "INGERO_STANDIN_US=0".into(),
        "INGERO_STANDIN_SYNC_US=3000000".into(),
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "1".into(),
        "--pids".into(),
        pids.display().to_string(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.multi_uprobes = multi_uprobes;
    let handle = start(cfg).expect("start");
    // cuLaunchKernel is the call just before the 3 s synchronize: once it is
    // counted, the workload is inside the synchronize; stop 500 ms later.
    let t0 = std::time::Instant::now();
    while !handle
        .status()
        .ops
        .iter()
        .any(|o| o.name == "cuLaunchKernel")
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "no launch seen");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(500));
    let summary = handle.stop().expect("stop");
    assert_eq!(summary.reason, StopReason::Requested);
    assert_eq!(summary.status.unfinished_calls, 1);
    let conn = Connection::open(&db).expect("open");
    let (ret, dur, stream): (i64, i64, i64) = conn
        .query_row(
            "SELECT ret, dur_ns, stream FROM cuda_calls WHERE op_id = 5",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the open synchronize");
    assert_eq!(ret, unfinished::OPEN_AT_STOP);
    assert_eq!(stream, 0x5157, "arguments kept from the entry probe");
    assert!(
        (500_000_000..3_000_000_000).contains(&dur),
        "duration to the stop: {dur} ns"
    );
    assert_eq!(losses(&conn, loss_source::OPEN_AT_STOP), 1);
    readable(&db);
    // The workload outlives the capture (it was released, not killed); wait
    // for it so it does not spin on after the test.
    for _ in 0..100 {
        if pids.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_full_ring_buffer_counts_every_dropped_record() {
    if !common::can_trace() {
        return;
    }
    const ITERS: i64 = 20_000;
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("overflow.db");
    let pids = tmp.path().join("pids");
    // One page of ring (about 56 records) drained every 200 ms, against a
    // loop making calls as fast as it can.
    let summary = capture(
        &db,
        &[("INGERO_STANDIN_US", "0")],
        &[
            "--iters",
            &ITERS.to_string(),
            "--pids",
            &pids.display().to_string(),
        ],
        |cfg| {
            cfg.ring_bytes = 4096;
            // Every launch timed, one record each: every call is a row or a
            // counted drop.
            cfg.launch_sample = 0;
            cfg.launch_rows = 1;
            cfg.call_rows = 0;
            cfg.poll_interval = Duration::from_millis(200);
        },
    );
    assert_eq!(summary.command_exit, Some(0));
    let ring_full = summary.status.losses.ring_full;
    assert!(ring_full > 0, "{:?}", summary.status);
    assert_eq!(summary.status.drops, ring_full);
    let text = render::summary(&summary);
    assert!(
        text.contains("dropped in the kernel because the ring buffer was full")
            && text.contains("--ring-size"),
        "{text}"
    );

    let conn = Connection::open(&db).expect("open");
    assert_eq!(losses(&conn, loss_source::RINGBUF) as u64, ring_full);
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM capture_losses l JOIN sessions s ON s.id = l.session_id \
             WHERE l.ts_ns NOT BETWEEN s.started_ns AND s.stopped_ns",
            []
        ),
        0,
        "loss rows inside the session's span"
    );
    let parent = read_pids(&pids).parent;
    let stored = one(
        &conn,
        "SELECT COUNT(*) FROM cuda_calls WHERE pid = ?1",
        [parent],
    );
    let made = 4 * ITERS + 14;
    assert!(stored < made, "{stored} of {made} stored despite the drops");
    // Every call the workload made is either stored or counted as dropped
    // (the drop count also covers host events, hence >=).
    assert!(
        stored + ring_full as i64 >= made,
        "{stored} stored + {ring_full} dropped < {made} made"
    );
    let written = one(&conn, "SELECT COUNT(*) FROM cuda_calls", [])
        + one(&conn, "SELECT COUNT(*) FROM host_events", []);
    assert_eq!(written as u64, summary.status.events_written);
    readable(&db);
}

#[test]
fn a_library_unloaded_and_loaded_again_is_still_traced() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("reload.db");
    // No library given: the capture finds them when the workload maps them,
    // and the workload waits 1.5 s for that before its first call.
    let summary = capture(
        &db,
        &[("INGERO_STANDIN_US", "0")],
        &["--iters", "50", "--wait-ms", "1500", "--reload", "30"],
        |cfg| cfg.libraries.clear(),
    );
    assert_eq!(
        summary.command_exit,
        Some(0),
        "76: still mapped after dlclose"
    );
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.status.drops, 0);
    assert_eq!(summary.status.unfinished_calls, 0);
    assert!(
        summary
            .status
            .libraries
            .iter()
            .any(|l| l.ends_with("libcudart.so.13")),
        "{:?}",
        summary.status.libraries
    );
    let conn = Connection::open(&db).expect("open");
    // 50 launches before the unload, 30 after loading it again.
    assert_eq!(
        // Every launch counted (fast ones are folded in the kernel: no raw row).
        one(
            &conn,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 3",
            []
        ),
        80
    );
    assert_eq!(
        one(&conn, "SELECT COUNT(*) FROM capture_losses", []),
        0,
        "nothing lost or left open"
    );
    readable(&db);
}

#[test]
fn a_thread_ending_inside_a_call_does_not_disturb_the_others() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("thread.db");
    let pids = tmp.path().join("pids");
    // A second thread calls cudaStreamSynchronize and ends inside it
    // (pthread_exit after 200 ms); the main thread then runs its loop.
    let summary = capture(
        &db,
        &[
            ("INGERO_STANDIN_US", "0"),
            ("INGERO_STANDIN_SYNC_US", "200000"),
            ("INGERO_STANDIN_EXIT_OFF_MAIN", "1"),
        ],
        &[
            "--iters",
            "5",
            "--side-sync",
            "--pids",
            &pids.display().to_string(),
        ],
        |_| {},
    );
    assert_eq!(summary.command_exit, Some(0));
    assert_eq!(summary.status.unfinished_calls, 1);
    assert_eq!(summary.status.drops, 0);
    let conn = Connection::open(&db).expect("open");
    let (pid, tid, ret, dur): (i64, i64, i64, i64) = conn
        .query_row(
            "SELECT pid, tid, ret, dur_ns FROM cuda_calls WHERE op_id = 5 AND ret != 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .expect("the side thread's call");
    assert_eq!(ret, unfinished::THREAD_EXITED);
    assert_ne!(tid, pid, "ended on the side thread");
    assert!(dur >= 200_000_000, "{dur} ns");
    // The main thread's synchronizes all returned normally.
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM cuda_calls WHERE op_id = 5 AND ret = 0 AND tid = pid",
            []
        ),
        5
    );
    assert_eq!(losses(&conn, loss_source::UNFINISHED_CALL), 1);
    // The process itself ended normally, once.
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM host_events WHERE kind = 6 AND pid = ?1 AND arg = 0",
            [pid]
        ),
        1
    );
    readable(&db);
}

#[test]
fn a_probed_library_deleted_from_disk_keeps_being_traced() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let libs = tmp.path().join("libs");
    std::fs::create_dir(&libs).expect("mkdir");
    for name in ["libcudart.so.13", "libcuda.so.1", "workload"] {
        std::fs::copy(common::standin().join(name), libs.join(name)).expect("copy");
    }
    let db = tmp.path().join("deleted.db");
    let argv = vec![
        "env".to_string(),
        "INGERO_STANDIN_US=0".into(),
        libs.join("workload").display().to_string(),
        "--iters".into(),
        "100".into(),
        "--wait-ms".into(),
        "1500".into(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = vec![libs.join("libcudart.so.13"), libs.join("libcuda.so.1")];
    cfg.duration = Some(Duration::from_secs(60));
    let handle = start(cfg).expect("start");
    // Once the workload has mapped both libraries (it then waits 1.5 s),
    // remove the files, as a package upgrade would, before its first call.
    let mapped = |name: &str| {
        let want = libs.join(name).display().to_string();
        ingero_probes::procs::all_pids().into_iter().any(|p| {
            std::fs::read_to_string(format!("/proc/{p}/maps")).is_ok_and(|m| m.contains(&want))
        })
    };
    let t0 = std::time::Instant::now();
    while !(mapped("libcudart.so.13") && mapped("libcuda.so.1")) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the workload never mapped the libraries"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for name in ["libcudart.so.13", "libcuda.so.1"] {
        std::fs::remove_file(libs.join(name)).expect("delete library");
    }
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.command_exit, Some(0));
    assert!(summary.status.error.is_none(), "{:?}", summary.status.error);
    assert_eq!(summary.status.drops, 0);
    let conn = Connection::open(&db).expect("open");
    assert_eq!(
        // Every launch counted (fast ones are folded in the kernel: no raw row).
        one(
            &conn,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 3",
            []
        ),
        100
    );
    readable(&db);
}
