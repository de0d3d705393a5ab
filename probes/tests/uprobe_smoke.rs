//! The loader sees real uprobe events from the stand-in libraries.

mod common;

use ingero_probes::clock::Clock;
use ingero_probes::decode::{decode, Record};
use ingero_probes::loader::{AttachOutcome, LoadOptions, Probes};
use std::process::Command;
use std::time::Duration;

#[test]
fn uprobes_time_stand_in_calls() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let mut probes = Probes::load(LoadOptions {
        trace_all: true,
        self_tgid: std::process::id(),
        ring_bytes: 1 << 22,
    })
    .expect("load");
    let lib = dir.join("libcudart.so.13");
    assert!(matches!(
        probes.attach_library(&lib).expect("attach"),
        AttachOutcome::Attached(14)
    ));
    assert_eq!(
        probes.attach_library(&lib).expect("again"),
        AttachOutcome::AlreadyAttached
    );
    let mut ring = probes.take_ring().expect("ring");
    let clock = Clock::measure();

    let out = Command::new(dir.join("workload"))
        .args(["--iters", "10"])
        .env("INGERO_STANDIN_US", "200")
        .output()
        .expect("workload");
    assert!(out.status.success());
    std::thread::sleep(Duration::from_millis(50));

    let mut launches = Vec::new();
    while let Some(item) = ring.next() {
        if let Ok(Record::Cuda(c)) = decode(&item, &clock) {
            if c.op_id == 3 {
                launches.push(c);
            }
        }
    }
    assert_eq!(launches.len(), 10, "{launches:?}");
    // Every call lasts at least the injected delay; a loaded machine may
    // stretch single calls (the stand-in spins on-CPU), so only the median
    // is held close to it.
    for c in &launches {
        assert!(c.dur_ns >= 200_000, "{c:?}");
        assert_eq!(c.stream, 0x5157);
    }
    let mut durs: Vec<i64> = launches.iter().map(|c| c.dur_ns).collect();
    durs.sort_unstable();
    assert!(durs[durs.len() / 2] < 2_000_000, "median of {durs:?}");
}
