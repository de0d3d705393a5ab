//! The loader sees real uprobe events from the stand-in libraries.

mod common;

use ingero_probes::clock::Clock;
use ingero_probes::decode::{decode, Record};
use ingero_probes::loader::{AttachOutcome, LoadOptions, Probes};
use ingero_store::CudaCall;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

/// Runs the stand-in workload (10 iterations) under probes loaded with or
/// without multi-uprobe links and returns every CUDA call seen.
fn traced_calls(multi: bool) -> Vec<CudaCall> {
    let dir = common::standin();
    let mut probes = Probes::load(LoadOptions {
        trace_all: true,
        self_tgid: std::process::id(),
        ring_bytes: 1 << 22,
        multi_uprobes: multi,
        offcpu_stacks: false,
        launch_sample: 0,
        launch_rows: 0,
        call_rows: 0,
    })
    .expect("load");
    assert_eq!(
        probes.uses_multi_uprobes(),
        multi,
        "multi-uprobe links need Linux 6.6+ with CONFIG_UPROBES"
    );
    let lib = dir.join("libcudart.so.13");
    // Every catalogued runtime function the stand-in defines.
    assert!(matches!(
        probes.attach_library(&lib, None).expect("attach"),
        AttachOutcome::Attached(23)
    ));
    assert_eq!(
        probes.attach_library(&lib, None).expect("again"),
        AttachOutcome::AlreadyAttached
    );
    let mut ring = probes.take_ring().expect("ring");
    let clock = Clock::measure();

    // Every process is traced: other tests' workloads are filtered out.
    let child = Command::new(dir.join("workload"))
        .args(["--iters", "10"])
        .env("INGERO_STANDIN_US", "200")
        .spawn()
        .expect("workload");
    let pid = child.id() as i32;
    let out = child.wait_with_output().expect("workload");
    assert!(out.status.success());
    std::thread::sleep(Duration::from_millis(50));

    let mut calls = Vec::new();
    while let Some(item) = ring.next() {
        if let Ok(Record::Cuda(c)) = decode(&item, &clock) {
            if c.pid == pid {
                calls.push(c);
            }
        }
    }
    calls
}

#[test]
fn uprobes_time_stand_in_calls() {
    if !common::can_trace() {
        return;
    }
    for multi in [true, false] {
        let calls = traced_calls(multi);
        let launches: Vec<&CudaCall> = calls.iter().filter(|c| c.op_id == 3).collect();
        assert_eq!(launches.len(), 10, "multi {multi}: {launches:?}");
        // Every call lasts at least the injected delay; a loaded machine may
        // stretch single calls (the stand-in spins on-CPU), so only the
        // median is held close to it.
        for c in &launches {
            assert!(c.dur_ns >= 200_000, "{c:?}");
            assert_eq!(c.stream, 0x5157, "stack argument read (multi {multi})");
            assert_eq!((c.grid, c.block), ([4, 2, 1], [128, 1, 1]), "multi {multi}");
        }
        let mut durs: Vec<i64> = launches.iter().map(|c| c.dur_ns).collect();
        durs.sort_unstable();
        assert!(durs[durs.len() / 2] < 2_000_000, "median of {durs:?}");
    }
}

/// The arguments a call was recorded with: op, bytes, copy kind, stream,
/// return code, then grid, block, shared memory and the nested flag.
type Shape = ((u16, i64, i64, i64, i64), ([u32; 3], [u32; 3], u32, bool));

/// What a call says about its arguments, without times or thread ids.
fn shape(calls: &[CudaCall]) -> BTreeMap<Shape, usize> {
    let mut out = BTreeMap::new();
    for c in calls {
        let args = (c.op_id, c.bytes, c.copy_kind, c.stream, c.ret);
        let launch = (c.grid, c.block, c.shared_mem, c.nested);
        *out.entry((args, launch)).or_default() += 1;
    }
    out
}

#[test]
fn multi_uprobe_links_record_what_per_function_links_record() {
    if !common::can_trace() {
        return;
    }
    let multi = shape(&traced_calls(true));
    let classic = shape(&traced_calls(false));
    assert!(multi.len() > 3, "{multi:?}");
    assert_eq!(multi, classic);
}
