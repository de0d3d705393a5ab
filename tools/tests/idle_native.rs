//! The GPU-idle breakdown on a small native database whose every interval is
//! known, so each figure can be checked to the nanosecond.

use ingero_store::catalog::cuda_op_by_name;
use ingero_store::{
    CudaCall, Event, HostEvent, HostKind, ProcessInfo, RawPolicy, SessionInfo, TraceDb, TraceWriter,
};
use ingero_tools::explain::explain;
use ingero_tools::Scope;

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;

fn call(op: &str, at_ms: i64, dur: i64) -> Event {
    Event::Cuda(CudaCall {
        ts_ns: T0 + at_ms * MS,
        pid: 100,
        tid: 100,
        op_id: cuda_op_by_name(op).map(|o| o.id).expect(op),
        dur_ns: dur,
        bytes: 0,
        copy_kind: -1,
        stream: 0,
        ret: 0,
        ..Default::default()
    })
}

fn switch(at_ms: i64, off_ms: i64, preempted: bool) -> Event {
    Event::Host(HostEvent {
        ts_ns: T0 + at_ms * MS,
        pid: 100,
        tid: 100,
        kind: HostKind::SchedSwitch,
        dur_ns: off_ms * MS,
        arg: preempted as i64,
        cpu: 0,
        count: 1,
        bytes: 0,
    })
}

#[test]
fn busy_wait_and_causes_add_up_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("idle.db");
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    w.upsert_process(&ProcessInfo {
        pid: 100,
        comm: "python3".into(),
        first_seen_ns: T0,
        last_seen_ns: T0 + 1000 * MS,
        ..Default::default()
    })
    .expect("process");
    w.write_batch(&[
        // Step 1: launch at 100 ms, sync at 101 ms waits until 110 ms.
        call("cudaLaunchKernel", 100, 50_000),
        call("cudaStreamSynchronize", 101, 9 * MS),
        // Host wait 110..600: preempted 200..300, blocked 400..450, rest on-CPU.
        switch(200, 100, true),
        switch(400, 50, false),
        // Step 2: launch at 600 ms; a sync that returns at once (work already done).
        call("cudaLaunchKernel", 600, 50_000),
        call("cudaStreamSynchronize", 700, 20_000),
    ])
    .expect("batch");
    w.finish(T0 + 1000 * MS).expect("finish");

    let db = TraceDb::open(&path).expect("open");
    let r = explain(&db, &Scope::ALL).expect("explain");
    let idle = &r.chains.gpu_idle[0];
    assert_eq!(idle.span_ns, 1000 * MS);
    // Busy: [100, 110] ms (launch queued until the sync that waited) plus the
    // second launch (50 us) and the quick sync (20 us).
    let busy = 10 * MS + 50_000 + 20_000;
    assert_eq!(idle.busy_ns, busy);
    assert_eq!(idle.host_wait_ns, 1000 * MS - busy);
    let c = &idle.causes;
    assert_eq!(c.before_first_call_ns, 100 * MS);
    assert_eq!(c.off_cpu_preempted_ns, 100 * MS);
    assert_eq!(c.off_cpu_blocked_ns, 50 * MS);
    assert_eq!(c.after_last_call_ns, 300 * MS - 20_000);
    // Between 110 ms and 700.02 ms minus busy and off-CPU: on-CPU host work.
    let between = (700 * MS + 20_000) - 110 * MS - 50_000 - 20_000;
    assert_eq!(c.host_compute_ns, between - 150 * MS);
    let sum = c.before_first_call_ns
        + c.off_cpu_preempted_ns
        + c.off_cpu_blocked_ns
        + c.host_compute_ns
        + c.after_last_call_ns
        + c.waiting_on_workers_ns
        + c.page_alloc_storm_ns
        + c.off_cpu_unknown_ns;
    assert_eq!(sum, idle.host_wait_ns);
    assert_eq!(idle.long_gaps, 0, "no gap reaches 500 ms");
    assert_eq!(idle.sync.syncs, 2);
    assert_eq!(idle.launches.launches, 2);
    let gaps = idle
        .rules
        .iter()
        .find(|r| r.rule == "gpu_gaps")
        .expect("rule");
    assert!(!gaps.triggered);
    let util = idle
        .rules
        .iter()
        .find(|r| r.rule == "gpu_time_utilization")
        .expect("rule");
    assert!(util.triggered);
}
