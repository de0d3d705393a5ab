//! Call statistics under sampled launch timing: durations flagged as
//! estimated (the thread's mean of its timed launches) are counted in the
//! totals but never stand in for measurements in the distribution.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{CudaCall, Event, ProcessInfo, RawPolicy, SessionInfo, TraceDb, TraceWriter};
use ingero_tools::stats::op_stats;
use ingero_tools::Scope;

const T0: i64 = 1_700_000_000_000_000_000;
const US: i64 = 1_000;

fn launch(i: i64, dur_ns: i64, estimated: bool) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + i * 100 * US,
        pid: 7,
        tid: 7,
        op_id: cuda_op_by_name("cuLaunchKernel").map(|o| o.id).expect("op"),
        dur_ns,
        copy_kind: -1,
        dur_estimated: estimated,
        ..Default::default()
    })
}

#[test]
fn percentiles_and_max_are_of_the_timed_launches_totals_of_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sampled.db");
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    w.upsert_process(&ProcessInfo {
        pid: 7,
        comm: "python3".into(),
        first_seen_ns: T0,
        last_seen_ns: T0 + 1_000_000 * US,
        ..Default::default()
    })
    .expect("process");
    // One launch in 4 timed: 10 us, except every 10th timed one at 1 ms; the
    // 3 between are estimates of 12 us.
    let mut events = Vec::new();
    let mut timed = Vec::new();
    for i in 0..400 {
        if i % 4 == 0 {
            let d = if (i / 4) % 10 == 9 {
                1_000 * US
            } else {
                10 * US
            };
            timed.push(d);
            events.push(launch(i, d, false));
        } else {
            events.push(launch(i, 12 * US, true));
        }
    }
    w.write_batch(&events).expect("batch");
    w.finish(T0 + 1_000_000 * US).expect("finish");

    let db = TraceDb::open(&path).expect("open");
    let r = op_stats(&db, &Scope::ALL).expect("stats");
    let op = r
        .ops
        .iter()
        .find(|o| o.op == "cuLaunchKernel")
        .expect("launch row");
    assert_eq!(op.count, 400);
    // Totals: 90 x 10 us + 10 x 1 ms + 300 x 12 us.
    assert_eq!(op.total_ns, 90 * 10 * US + 10 * 1_000 * US + 300 * 12 * US);
    // Of the 100 timed launches, 90 took 10 us and 10 took 1 ms: the median
    // is 10 us and p95 is 1 ms. With the 300 estimates of 12 us mixed in,
    // the median would be 12 us and p95 12 us too (only 10 of 400 above).
    assert_eq!(op.max_ns, 1_000 * US);
    let p50 = op.p50_ns.expect("p50");
    let p95 = op.p95_ns.expect("p95");
    assert!(
        (9 * US..=11 * US).contains(&p50),
        "p50 {p50}: estimates taken for measurements"
    );
    assert!(
        p95 > 900 * US,
        "p95 {p95}: estimates taken for measurements"
    );
    assert!(
        op.basis.contains("300 of the 400 raw calls were not timed"),
        "{}",
        op.basis
    );
    assert_eq!(timed.len(), 100);
}
