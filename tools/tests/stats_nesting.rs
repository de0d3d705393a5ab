//! `get_trace_stats` counts each logical call once: a driver call made inside
//! a runtime call of the same thread (cuLaunchKernel inside cudaLaunchKernel,
//! cuMemFree_v2 inside cudaFree) stays visible under its own op but is not
//! added to the totals again; a capture that stopped probing the runtime
//! launch functions says what their counts then cover. Checked on native
//! files written through the store's writer (every row kept, and sampled),
//! where every figure follows from what was inserted, and on an Ingero file
//! (no nesting flag) against SQL on the file.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{CudaCall, Event, RawPolicy, SessionInfo, TimeWindow, TraceDb, TraceWriter};
use ingero_tools::stats::{op_stats, OpStats, OpStatsReport};
use ingero_tools::Scope;
use std::path::{Path, PathBuf};

const T0: i64 = 1_700_000_000_000_000_000;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;
/// When the runtime launch probes went.
const WENT: i64 = 100 * MS;

fn call(op: &str, at_ns: i64, dur_ns: i64, nested: bool) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + at_ns,
        pid: 100,
        tid: 100,
        op_id: cuda_op_by_name(op).map(|o| o.id).expect(op),
        dur_ns,
        copy_kind: -1,
        nested,
        ..Default::default()
    })
}

/// Ten launches (20 us, each with a nested 10 us cuLaunchKernel), a cudaFree
/// of 500 us with a nested 300 us cuMemFree_v2, one direct cuLaunchKernel of
/// 8 us (the cuBLAS path) and a 1 ms sync with a nested 900 us driver sync.
fn workload() -> Vec<Event> {
    let mut v = Vec::new();
    for i in 0..10 {
        let at = i * 10 * MS;
        v.push(call("cudaLaunchKernel", at, 20 * US, false));
        v.push(call("cuLaunchKernel", at + 2 * US, 10 * US, true));
    }
    v.push(call("cudaFree", 200 * MS, 500 * US, false));
    v.push(call("cuMemFree_v2", 200 * MS + 50 * US, 300 * US, true));
    v.push(call("cuLaunchKernel", 300 * MS, 8 * US, false));
    v.push(call("cudaStreamSynchronize", 310 * MS, MS, false));
    v.push(call(
        "cuStreamSynchronize",
        310 * MS + 40 * US,
        900 * US,
        true,
    ));
    v
}

fn write(dir: &Path, name: &str, policy: RawPolicy, events: &[Event]) -> PathBuf {
    let path = dir.join(name);
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, policy).expect("writer");
    w.write_batch(events).expect("batch");
    w.finish(T0 + 2_000 * MS).expect("finish");
    path
}

fn op<'a>(r: &'a OpStatsReport, name: &str) -> &'a OpStats {
    r.ops
        .iter()
        .find(|o| o.op == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

#[test]
fn totals_count_outer_calls_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(dir.path(), "all.db", RawPolicy::All, &workload());
    let db = TraceDb::open(&path).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");

    // Outer calls: 10 launches, 1 free, 1 direct driver launch, 1 sync.
    assert_eq!(r.total_calls, 13);
    let outer_ns = 10 * 20 * US + 500 * US + 8 * US + MS;
    assert_eq!(r.cuda_api_time_ns, outer_ns);
    assert_eq!(r.nested_calls, 12);
    assert_eq!(r.nested_time_ns, 10 * 10 * US + 300 * US + 900 * US);
    // Per op: each op's own count, with its nested part.
    let drv = op(&r, "cuLaunchKernel");
    assert_eq!((drv.count, drv.nested_count), (11, 10));
    assert_eq!(
        (drv.total_ns, drv.nested_ns),
        (10 * 10 * US + 8 * US, 100 * US)
    );
    assert!(drv.exact);
    let free = op(&r, "cuMemFree_v2");
    assert_eq!(
        (free.count, free.nested_count, free.nested_ns),
        (1, 1, 300 * US)
    );
    assert_eq!(free.share_of_cuda_time, 0.0);
    let rt = op(&r, "cudaLaunchKernel");
    assert_eq!((rt.count, rt.nested_count), (10, 0));
    // Shares are of the outer time and add up to one.
    let share = |name: &str| op(&r, name).share_of_cuda_time;
    assert!((share("cudaLaunchKernel") - (200 * US) as f64 / outer_ns as f64).abs() < 1e-12);
    assert!((share("cuLaunchKernel") - (8 * US) as f64 / outer_ns as f64).abs() < 1e-12);
    assert!((share("cudaStreamSynchronize") - MS as f64 / outer_ns as f64).abs() < 1e-12);
    let sum: f64 = r.ops.iter().map(|o| o.share_of_cuda_time).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    assert!(
        r.notes.iter().any(|n| n.contains("12 calls")),
        "{:?}",
        r.notes
    );
    // The per-op rows still add up to the double-counted figure.
    let naive: i64 = r.ops.iter().map(|o| o.total_ns).sum();
    assert_eq!(naive, outer_ns + r.nested_time_ns);
}

#[test]
fn sampled_ops_take_the_nested_part_from_the_totals() {
    // 100 launches in one second, each with its nested driver launch; the
    // writer keeps 2 raw rows per second and op, the aggregates count all.
    let mut events = Vec::new();
    for i in 0..100 {
        let at = i * 5 * MS;
        events.push(call("cudaLaunchKernel", at, 20 * US, false));
        events.push(call("cuLaunchKernel", at + 2 * US, 10 * US, true));
    }
    events.push(call("cuLaunchKernel", 900 * MS, 8 * US, false));
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(
        dir.path(),
        "sampled.db",
        RawPolicy::Sampled {
            per_second: 2,
            always_keep_ns: 100 * MS,
        },
        &events,
    );
    let db = TraceDb::open(&path).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");
    let drv = op(&r, "cuLaunchKernel");
    assert!(!drv.exact);
    assert_eq!(drv.raw_rows, 2);
    assert_eq!((drv.count, drv.nested_count), (101, 100));
    assert_eq!(
        (drv.total_ns, drv.nested_ns),
        (100 * 10 * US + 8 * US, 100 * 10 * US)
    );
    assert_eq!(r.total_calls, 100 + 1);
    assert_eq!(r.cuda_api_time_ns, 100 * 20 * US + 8 * US);
    assert_eq!(r.nested_calls, 100);
}

#[test]
fn ingero_files_infer_nesting_from_time_containment() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
    let raw =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("raw");
    let one = |sql: &str| -> i64 { raw.query_row(sql, [], |r| r.get(0)).expect(sql) };
    // A driver row is nested when a runtime row of its thread starts no later
    // and ends no earlier.
    let inside = "EXISTS (SELECT 1 FROM events r WHERE r.source = 1 AND r.tid = d.tid \
                  AND r.timestamp <= d.timestamp AND r.timestamp + r.duration >= d.timestamp + d.duration)";
    let db = TraceDb::open(&path).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");
    let mut want_nested_calls = 0;
    let mut want_nested_ns = 0;
    for (source, opnum, name) in [
        (4, 1, "cuLaunchKernel"),
        (4, 4, "cuCtxSynchronize"),
        (4, 5, "cuMemAlloc_v2"),
    ] {
        let o = op(&r, name);
        let raw_n = one(&format!(
            "SELECT COUNT(*) FROM events d WHERE d.source = {source} AND d.op = {opnum}"
        ));
        let raw_ns = one(&format!(
            "SELECT SUM(duration) FROM events d WHERE d.source = {source} AND d.op = {opnum}"
        ));
        let nested_n = one(&format!(
            "SELECT COUNT(*) FROM events d WHERE d.source = {source} AND d.op = {opnum} AND {inside}"
        ));
        let nested_ns = one(&format!(
            "SELECT COALESCE(SUM(d.duration), 0) FROM events d WHERE d.source = {source} AND d.op = {opnum} AND {inside}"
        ));
        let count = one(&format!(
            "SELECT SUM(count) FROM event_aggregates WHERE source = {source} AND op = {opnum}"
        ));
        let total = one(&format!(
            "SELECT SUM(sum_dur) FROM event_aggregates WHERE source = {source} AND op = {opnum}"
        ));
        let (n, ns) = if count == raw_n {
            (nested_n, nested_ns)
        } else {
            // Sampled: the kept rows' nested share applied to the totals.
            (
                (count as f64 * nested_n as f64 / raw_n as f64).round() as i64,
                (total as f64 * nested_ns as f64 / raw_ns as f64).round() as i64,
            )
        };
        assert_eq!(
            (o.count, o.nested_count, o.nested_ns),
            (count, n, ns),
            "{name}"
        );
        want_nested_calls += n;
        want_nested_ns += ns;
    }
    // cuCtxSynchronize lies wholly inside cudaDeviceSynchronize.
    assert_eq!(op(&r, "cuCtxSynchronize").nested_count, 3);
    let all_calls = one("SELECT SUM(count) FROM event_aggregates WHERE source IN (1, 4)");
    let all_ns = one("SELECT SUM(sum_dur) FROM event_aggregates WHERE source IN (1, 4)");
    assert_eq!(r.nested_calls, want_nested_calls);
    assert_eq!(r.total_calls, all_calls - want_nested_calls);
    assert_eq!(r.cuda_api_time_ns, all_ns - want_nested_ns);
    assert!(r
        .notes
        .iter()
        .any(|n| n.contains("does not record nesting")));
}

// The capture stopped probing the runtime launch functions (table
// `launch_level_changes`): before the change, each runtime launch shows
// under cudaLaunchKernel with its driver launch nested inside; after it,
// runtime launches show only as outer cuLaunchKernel calls. The note and
// the basis name the stretch, and a window before the change has neither.

/// Ten runtime launches, each with its driver launch nested, every 9 ms;
/// the runtime level goes at 100 ms; then twenty launches seen at the
/// driver only, every 10 ms from 110 ms.
fn write_levels(dir: &Path, change: bool) -> PathBuf {
    let path = dir.join(if change { "went.db" } else { "both.db" });
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    let mut events = Vec::new();
    for i in 0..10 {
        events.push(call("cudaLaunchKernel", i * 9 * MS, 20 * US, false));
        events.push(call("cuLaunchKernel", i * 9 * MS + 2 * US, 10 * US, true));
    }
    for i in 0..20 {
        events.push(call(
            "cuLaunchKernel",
            110 * MS + i * 10 * MS,
            10 * US,
            false,
        ));
    }
    w.write_batch(&events).expect("batch");
    if change {
        w.write_launch_level_change(T0 + WENT, false, 10)
            .expect("change");
    }
    w.finish(T0 + 2_000 * MS).expect("finish");
    path
}

fn level_note(r: &OpStatsReport) -> Option<&String> {
    r.notes.iter().find(|n| n.contains("launch_level_changes"))
}

#[test]
fn the_counts_of_a_capture_whose_runtime_level_went_say_so() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&write_levels(dir.path(), true)).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");
    let rt = op(&r, "cudaLaunchKernel");
    let drv = op(&r, "cuLaunchKernel");
    assert_eq!(rt.count, 10);
    assert_eq!((drv.count, drv.nested_count), (30, 10));
    // Every launch once among the outer calls of both levels.
    assert_eq!(rt.outer_count() + drv.outer_count(), 30);
    let note = level_note(&r).unwrap_or_else(|| panic!("no note: {:?}", r.notes));
    assert!(
        note.contains("from +0.10 s to the end of the capture"),
        "{note}"
    );
    assert!(note.contains("10 runtime launches probed"), "{note}");
    assert!(note.contains("outer calls of the launch class"), "{note}");
    assert!(
        rt.basis
            .contains("not probed from +0.10 s to the end of the capture"),
        "{}",
        rt.basis
    );
    assert!(!drv.basis.contains("not probed"), "{}", drv.basis);
}

#[test]
fn a_window_before_the_change_or_a_capture_without_one_has_no_caveat() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&write_levels(dir.path(), true)).expect("open");
    let end = db.span().end_ns;
    let before = Scope {
        window: TimeWindow {
            since_ns: None,
            until_ns: Some(end - (T0 + 95 * MS)),
        },
        pid: None,
    };
    let r = op_stats(&db, &before).expect("stats");
    assert_eq!(op(&r, "cudaLaunchKernel").count, 10);
    assert!(level_note(&r).is_none(), "{:?}", r.notes);
    assert!(!op(&r, "cudaLaunchKernel").basis.contains("not probed"));
    // A window inside the stretch has it.
    let after = Scope {
        window: TimeWindow {
            since_ns: Some(end - (T0 + 150 * MS)),
            until_ns: None,
        },
        pid: None,
    };
    let r = op_stats(&db, &after).expect("stats");
    assert!(level_note(&r).is_some(), "{:?}", r.notes);

    let both = TraceDb::open(&write_levels(dir.path(), false)).expect("open");
    let r = op_stats(&both, &Scope::ALL).expect("stats");
    assert!(level_note(&r).is_none(), "{:?}", r.notes);
}
