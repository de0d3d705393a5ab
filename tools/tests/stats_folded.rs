//! Statistics of a capture that folded calls in the kernel (call folding):
//! counts and totals cover every call through the aggregates, percentiles
//! weight the kept rows back to every call (every slow call is a row, the
//! fast ones a sample), and the GPU thread's calls and sync time come from
//! the activity spans, not from the sampled rows.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::schema::{CALL_ROW_KEEP_NS, META_CALL_ROW_KEEP_NS};
use ingero_store::{
    CallFold, CudaCall, Event, ProcessInfo, RawPolicy, SessionInfo, TraceDb, TraceWriter,
};
use ingero_tools::stats::op_stats;
use ingero_tools::Scope;

const T0: i64 = 1_700_000_000_000_000_000;
const US: i64 = 1_000;
const PID: i32 = 7;

fn op(name: &str) -> u16 {
    cuda_op_by_name(name).map(|o| o.id).expect("op")
}

fn sync_row(ts_ns: i64, dur_ns: i64) -> Event {
    Event::Cuda(CudaCall {
        ts_ns,
        pid: PID,
        tid: PID,
        op_id: op("cudaStreamSynchronize"),
        dur_ns,
        copy_kind: -1,
        stream: 5,
        ..Default::default()
    })
}

/// 100 ms of `cudaStreamSynchronize` returning at once: 10,000 calls of
/// 5 us, every 10 us; 8 of them kept as rows (the budget), the rest folded
/// in 10 folds; and 10 slow ones of 1 ms kept, one after each fold.
fn capture(path: &std::path::Path) {
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(path, &info, RawPolicy::All).expect("writer");
    w.set_meta(META_CALL_ROW_KEEP_NS, &CALL_ROW_KEEP_NS.to_string())
        .expect("meta");
    w.upsert_process(&ProcessInfo {
        pid: PID,
        comm: "python3".into(),
        first_seen_ns: T0,
        last_seen_ns: T0 + 200_000 * US,
        ..Default::default()
    })
    .expect("process");
    let mut events = Vec::new();
    let mut at = T0;
    for chunk in 0..10 {
        // The first chunk starts with the 8 kept fast rows.
        let kept = if chunk == 0 { 8 } else { 0 };
        for _ in 0..kept {
            events.push(sync_row(at, 5 * US));
            at += 10 * US;
        }
        let n = 1_000 - kept;
        events.push(Event::CallFold(CallFold {
            ts_ns: at,
            last_ts_ns: at + (n - 1) * 10 * US,
            last_end_ns: at + (n - 1) * 10 * US + 5 * US,
            pid: PID,
            tid: PID,
            op_id: op("cudaStreamSynchronize"),
            nested: false,
            stream: 5,
            count: n,
            dur_ns: n * 5 * US,
            min_dur_ns: 5 * US,
            max_dur_ns: 5 * US,
            bytes: 0,
            threads: 0,
            small: 0,
        }));
        at += n * 10 * US;
        events.push(sync_row(at, 1_000 * US));
        at += 1_010 * US;
    }
    w.write_batch(&events).expect("batch");
    w.finish(at).expect("finish");
}

#[test]
fn folded_calls_count_exactly_and_weigh_back_into_the_percentiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("folded.db");
    capture(&path);
    let db = TraceDb::open(&path).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");
    let sync = r
        .ops
        .iter()
        .find(|o| o.op == "cudaStreamSynchronize")
        .expect("sync row");
    assert_eq!(sync.count, 10_010);
    assert_eq!(sync.raw_rows, 18);
    assert_eq!(sync.total_ns, 10_000 * 5 * US + 10 * 1_000 * US);
    assert_eq!(sync.max_ns, 1_000 * US);
    // 10 of 10,010 calls are slow: the median and p95 are fast calls, and
    // p99 too (0.1% are slow). Unweighted, the 18 rows would put p95 at 1 ms.
    assert_eq!(sync.p50_ns, Some(5 * US));
    assert_eq!(sync.p95_ns, Some(5 * US));
    assert!(sync.basis.contains("call folding"), "{}", sync.basis);
}

#[test]
fn the_gpu_thread_s_calls_and_sync_time_come_from_the_activity_spans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("folded.db");
    capture(&path);
    let db = TraceDb::open(&path).expect("open");
    let ds = ingero_tools::dataset::Dataset::load(&db, &Scope::ALL).expect("dataset");
    assert!(ds.per_thread_from_spans());
    let t = ds.thread_calls(PID, PID).expect("thread");
    assert_eq!(t.calls, 10_010);
    let all_sync = 10_000 * 5 * US + 10 * 1_000 * US;
    assert_eq!((t.api_ns, t.sync_ns), (all_sync, all_sync));
    let est = ingero_tools::starvation::starvation_of(&ds);
    let e = est.iter().find(|e| e.pid == PID).expect("estimate");
    // From the 18 raw rows alone it would be 8 x 5 us + 10 ms.
    assert_eq!(e.sync_wait_ns, all_sync);
    assert_eq!(e.cuda_api_ns, all_sync);
    assert!(e.basis.contains("activity spans"), "{}", e.basis);
}

#[test]
fn the_idle_breakdown_counts_every_folded_synchronisation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("folded.db");
    capture(&path);
    let db = TraceDb::open(&path).expect("open");
    let ds = ingero_tools::dataset::Dataset::load(&db, &Scope::ALL).expect("dataset");
    let idle = ingero_tools::idle::idle_of(&ds);
    let p = idle.iter().find(|p| p.pid == PID).expect("process");
    // From the 18 raw rows alone it would be 18 synchronisations.
    assert_eq!(p.sync.syncs, 10_010);
    assert_eq!(p.sync.time_ns, 10_000 * 5 * US + 10 * 1_000 * US);
}
