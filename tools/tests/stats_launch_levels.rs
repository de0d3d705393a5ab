//! `get_trace_stats` says what the runtime launch functions' counts cover
//! when the capture stopped probing them (table `launch_level_changes`):
//! before the change, each runtime launch shows under `cudaLaunchKernel`
//! with its driver launch nested inside; after it, runtime launches show
//! only as outer `cuLaunchKernel` calls. The note and the basis name the
//! stretch, and a window before the change carries neither. Every figure
//! follows from the rows written here.

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

/// Ten runtime launches, each with its driver launch nested, every 9 ms;
/// the runtime level goes at 100 ms; then twenty launches seen at the
/// driver only, every 10 ms from 110 ms.
fn write(dir: &Path, change: bool) -> PathBuf {
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

fn op<'a>(r: &'a OpStatsReport, name: &str) -> &'a OpStats {
    r.ops
        .iter()
        .find(|o| o.op == name)
        .unwrap_or_else(|| panic!("{name} missing"))
}

fn level_note(r: &OpStatsReport) -> Option<&String> {
    r.notes.iter().find(|n| n.contains("launch_level_changes"))
}

#[test]
fn the_counts_of_a_capture_whose_runtime_level_went_say_so() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = TraceDb::open(&write(dir.path(), true)).expect("open");
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
    let db = TraceDb::open(&write(dir.path(), true)).expect("open");
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

    let both = TraceDb::open(&write(dir.path(), false)).expect("open");
    let r = op_stats(&both, &Scope::ALL).expect("stats");
    assert!(level_note(&r).is_none(), "{:?}", r.notes);
}
