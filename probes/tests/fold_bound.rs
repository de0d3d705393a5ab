//! Call folding holds a capture's size to the stated bound
//! (`config::BOUND_BYTES_PER_THREAD_S`) whatever the call rate, and keeps
//! exact counts: for each op class, a stand-in loop of 1M calls (real
//! uprobes on the stand-in runtime and driver, the runtime calling the
//! driver as the real one does) is captured with the defaults, and the
//! SQLite file is checked with SQL.

mod common;

use common::one;
use ingero_probes::config::BOUND_BYTES_PER_THREAD_S;
use ingero_probes::{start, CaptureConfig, StopReason, Target};
use rusqlite::Connection;
use std::path::Path;

/// Calls per loop.
const CALLS: i64 = 1_000_000;
/// Bytes argument of each copy, memset and allocation of the loops.
const BYTES: i64 = 256;

/// How many calls of an op were nested inside another probed call.
#[derive(Clone, Copy)]
enum Nested {
    /// None.
    No,
    /// All.
    All,
    /// As many as the runtime launches probed before the runtime launch
    /// level went (cudaLaunchKernel's count).
    WhileRuntimeProbed,
}

/// One op class of `workload --op`: the ops it calls (catalogue id, calls
/// made, bytes of each, nested) that the aggregates must count exactly.
struct Class {
    name: &'static str,
    ops: &'static [(i64, i64, i64, Nested)],
    /// Outer calls the activity spans must count.
    outer: i64,
}

const HALF: i64 = CALLS / 2;

const CLASSES: &[Class] = &[
    Class {
        name: "copy",
        ops: &[(7, CALLS, BYTES, Nested::No)],
        outer: CALLS,
    },
    Class {
        name: "memset",
        ops: &[(13, CALLS, BYTES, Nested::No)],
        outer: CALLS,
    },
    Class {
        name: "sync",
        ops: &[(5, CALLS, 0, Nested::No), (106, CALLS, 0, Nested::All)],
        outer: CALLS,
    },
    Class {
        name: "event",
        ops: &[
            (34, HALF, 0, Nested::No),
            (38, HALF, 0, Nested::No),
            (131, HALF, 0, Nested::All),
            (136, HALF, 0, Nested::All),
        ],
        outer: CALLS,
    },
    Class {
        name: "alloc",
        ops: &[
            (1, HALF, BYTES, Nested::No),
            (2, HALF, 0, Nested::No),
            (102, HALF, BYTES, Nested::All),
            (103, HALF, 0, Nested::All),
        ],
        outer: CALLS,
    },
    Class {
        // Every runtime launch reaches the driver's; the runtime level goes
        // after the first thousand, so the driver counts every launch.
        name: "launch",
        ops: &[(101, CALLS, 0, Nested::WhileRuntimeProbed)],
        outer: CALLS,
    },
];

/// Size of a database with its write-ahead log.
fn file_bytes(db: &Path) -> u64 {
    let wal = db.with_file_name(format!(
        "{}-wal",
        db.file_name().and_then(|n| n.to_str()).unwrap_or("")
    ));
    [db.to_path_buf(), wal]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

/// Captures `workload --op class --bench calls` with the defaults into
/// `db`; returns the capture's length in seconds.
fn capture(class: &str, calls: i64, db: &Path) -> f64 {
    capture_with(class, calls, db, &[])
}

/// The same, with `env` (NAME=VALUE) for the stand-in.
fn capture_with(class: &str, calls: i64, db: &Path, env: &[String]) -> f64 {
    let dir = common::standin();
    let mut argv: Vec<String> = vec!["env".into(), "INGERO_STANDIN_NESTED=1".into()];
    argv.extend(env.iter().cloned());
    argv.extend([
        dir.join("workload").display().to_string(),
        "--op".into(),
        class.into(),
        "--bench".into(),
        calls.to_string(),
    ]);
    let mut cfg = CaptureConfig::new(Target::Command(argv), db);
    cfg.libraries = common::standin_libraries();
    cfg.nvml = false;
    // Stack samples grow with time and CPUs, never with calls: the bound
    // is the CUDA capture's (README, "Capture size").
    cfg.stack_hz = 0;
    cfg.duration = Some(std::time::Duration::from_secs(120));
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited, "{class}");
    assert_eq!(summary.command_exit, Some(0), "{class}");
    assert_eq!(summary.status.drops, 0, "{class}: records lost");
    (summary.stopped_ns - summary.started_ns) as f64 / 1e9
}

#[test]
fn a_million_calls_of_each_class_stay_under_the_bound_with_exact_counts() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    // What a capture writes whatever the job does: the schema, the
    // catalogue, the session.
    let empty = tmp.path().join("empty.db");
    capture("copy", 0, &empty);
    let base = file_bytes(&empty);
    let mut report = Vec::new();
    for class in CLASSES {
        let db = tmp.path().join(format!("{}.db", class.name));
        let secs = capture(class.name, CALLS, &db);
        let conn = Connection::open(&db).expect("open");
        let pid = one(
            &conn,
            "SELECT pid FROM processes WHERE comm = 'workload'",
            [],
        );
        for &(op, calls, bytes, nested) in class.ops {
            let sql = "SELECT COALESCE(SUM(count), 0), COALESCE(SUM(sum_bytes), 0), \
                       COALESCE(SUM(nested_count), 0) FROM aggregates \
                       WHERE source = 1 AND code = ?1 AND pid = ?2";
            let (n, b, nest): (i64, i64, i64) = conn
                .query_row(sql, [op, pid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect(sql);
            assert_eq!(n, calls, "{}: op {op} counted", class.name);
            assert_eq!(b, calls * bytes, "{}: op {op} bytes", class.name);
            let want = match nested {
                Nested::No => 0,
                Nested::All => calls,
                Nested::WhileRuntimeProbed => one(
                    &conn,
                    "SELECT COALESCE(SUM(count), 0) FROM aggregates WHERE source = 1 AND code = 3",
                    [],
                ),
            };
            assert_eq!(nest, want, "{}: op {op} nested", class.name);
        }
        // The activity spans count every outer call of the loop thread.
        let spans = one(
            &conn,
            "SELECT COALESCE(SUM(calls), 0) FROM cuda_activity WHERE kind = 1 AND pid = ?1",
            [pid],
        );
        assert_eq!(
            spans, class.outer,
            "{}: outer calls in activity spans",
            class.name
        );
        let rows = one(&conn, "SELECT COUNT(*) FROM cuda_calls", []);
        drop(conn);
        // INGERO_FOLD_KEEP=DIR keeps each database there, to look inside.
        if let Some(keep) = std::env::var_os("INGERO_FOLD_KEEP") {
            let _ = std::fs::copy(&db, Path::new(&keep).join(format!("{}.db", class.name)));
        }
        let grown = file_bytes(&db).saturating_sub(base);
        let bound = BOUND_BYTES_PER_THREAD_S as f64 * secs.max(1.0);
        report.push(format!(
            "{}: {grown} bytes over {secs:.2} s ({:.0} B/s), {rows} raw rows",
            class.name,
            grown as f64 / secs.max(1.0)
        ));
        assert!(
            (grown as f64) <= bound,
            "{}: {grown} bytes in {secs:.2} s, over the bound of {bound:.0} ({report:?})",
            class.name
        );
    }
    eprintln!("{}", report.join("\n"));
}

/// Every slow call (at least 50 us) and every failed one keeps its raw row
/// whatever the budget; the others are still counted exactly.
#[test]
fn slow_and_failed_calls_always_keep_their_rows() {
    if !common::can_trace() {
        return;
    }
    const N: i64 = 200_000;
    const SLOW_EVERY: i64 = 1_000;
    const FAIL_EVERY: i64 = 997;
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("slow.db");
    capture_with(
        "copy",
        N,
        &db,
        &[
            format!("INGERO_STANDIN_CALL_SLOW_EVERY={SLOW_EVERY}"),
            "INGERO_STANDIN_CALL_SLOW_US=200".into(),
            format!("INGERO_STANDIN_FAIL_EVERY={FAIL_EVERY}"),
        ],
    );
    let conn = Connection::open(&db).expect("open");
    assert_eq!(
        one(
            &conn,
            "SELECT SUM(count) FROM aggregates WHERE source = 1 AND code = 7",
            []
        ),
        N
    );
    // The 1st, the 998th, ...: every failed call is a row with its code.
    let failed = (N + FAIL_EVERY - 1) / FAIL_EVERY;
    assert_eq!(
        one(
            &conn,
            "SELECT COUNT(*) FROM cuda_calls WHERE op_id = 7 AND ret = 1",
            []
        ),
        failed
    );
    // Every slow call is a row; a fast one preempted that long is one too.
    let slow = N / SLOW_EVERY;
    let slow_rows = one(
        &conn,
        "SELECT COUNT(*) FROM cuda_calls WHERE op_id = 7 AND dur_ns >= 200000",
        [],
    );
    assert!(
        (slow..=slow + N / 500).contains(&slow_rows),
        "{slow_rows} rows of >= 200 us for {slow} slow calls"
    );
    let rows = one(&conn, "SELECT COUNT(*) FROM cuda_calls", []);
    assert!(rows < N / 100, "{rows} raw rows for {N} calls");
}
