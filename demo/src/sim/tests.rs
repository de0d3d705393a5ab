//! Scheduler behaviour on tiny hosts, checked event by event.

use super::*;
use crate::host::{host_spec, MS, US};

fn host(cores: usize) -> HostSpec {
    HostSpec {
        quantum_ns: 4 * MS,
        ..host_spec(cores, 1)
    }
}

fn spin(ns: i64) -> impl FnMut(i64, &mut VecDeque<Op>) {
    move |_, out| {
        out.push_back(Op::Compute {
            ns,
            pages: Pages::NONE,
        })
    }
}

fn switches(events: &[Event], tid: i32) -> Vec<HostEvent> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Host(h) if h.kind == HostKind::SchedSwitch && h.tid == tid => Some(*h),
            _ => None,
        })
        .collect()
}

#[test]
fn two_spinners_on_one_core_take_turns_each_quantum() {
    let mut sim = Sim::new(host(1), 0);
    sim.spawn(1, 1, Start::At(0), Box::new(spin(100 * MS)));
    sim.spawn(2, 2, Start::At(0), Box::new(spin(100 * MS)));
    sim.run_until(1_000 * MS);
    let ev = sim.take_events();
    let a = switches(&ev, 1);
    assert_eq!(
        a.len(),
        125,
        "one preemption per 4 ms quantum over 1 s, half of them"
    );
    assert!(a
        .iter()
        .all(|h| h.dur_ns == 4 * MS && h.arg == SWITCH_PREEMPTED));
    let snaps = sim.take_snapshots();
    assert_eq!(snaps.len(), 1);
    assert_eq!(snaps[0].cpu_pct, 100.0);
    assert_eq!(snaps[0].procs_running, 2);
}

#[test]
fn a_lone_spinner_is_never_preempted() {
    let mut sim = Sim::new(host(2), 0);
    sim.spawn(1, 1, Start::At(0), Box::new(spin(10 * MS)));
    sim.run_until(1_000 * MS);
    assert!(switches(&sim.take_events(), 1).is_empty());
    assert_eq!(sim.take_snapshots()[0].cpu_pct, 50.0);
}

#[test]
fn cuda_call_duration_includes_waiting_for_a_core() {
    // One core, a spinner, and a thread whose sync call wakes while the
    // spinner holds the core: the call lasts until the thread runs again.
    let mut sim = Sim::new(host(1), 0);
    let mut done = false;
    let caller = move |_: i64, out: &mut VecDeque<Op>| {
        if !done {
            done = true;
            let mut l = CudaSpec::new(3);
            l.cpu_ns = 5 * US;
            l.gpu_ns = MS;
            out.push_back(Op::Cuda(l));
            let mut s = CudaSpec::new(5);
            s.wait_gpu = true;
            out.push_back(Op::Cuda(s));
        }
    };
    sim.spawn(1, 1, Start::At(0), Box::new(caller));
    sim.spawn(2, 2, Start::At(0), Box::new(spin(100 * MS)));
    sim.run_until(100 * MS);
    let calls: Vec<CudaCall> = sim
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Cuda(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].dur_ns, 5 * US);
    // GPU done at 1.005 ms, but the spinner keeps the core for a full quantum.
    assert_eq!(calls[1].ts_ns, 5 * US);
    assert_eq!(calls[1].dur_ns, 4 * MS);
}

#[test]
fn channel_hands_tokens_in_order_and_pages_are_spread() {
    let mut sim = Sim::new(host(2), 0);
    let ch = sim.add_chan(0);
    let mut sent = false;
    let producer = move |_: i64, out: &mut VecDeque<Op>| {
        if !sent {
            sent = true;
            out.push_back(Op::Compute {
                ns: 10 * MS,
                pages: Pages::new(0, 4),
            });
            out.push_back(Op::Put(ch));
        }
    };
    let mut got = false;
    let consumer = move |_: i64, out: &mut VecDeque<Op>| {
        if !got {
            got = true;
            out.push_back(Op::Take(ch));
        }
    };
    sim.spawn(1, 1, Start::At(0), Box::new(producer));
    sim.spawn(2, 2, Start::At(0), Box::new(consumer));
    sim.run_until(50 * MS);
    sim.close();
    let ev = sim.take_events();
    let pages: Vec<i64> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Host(h) if h.kind == HostKind::PageAlloc => Some(h.ts_ns),
            _ => None,
        })
        .collect();
    assert_eq!(pages, vec![2 * MS, 4 * MS, 6 * MS, 8 * MS]);
    let c = switches(&ev, 2);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].ts_ns, 0);
    assert_eq!(c[0].dur_ns, 10 * MS);
    assert_eq!(c[0].arg, SWITCH_SLEEP);
}
