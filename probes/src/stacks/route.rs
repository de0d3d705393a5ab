//! Joins an off-CPU stack (taken when the thread left the CPU) with the
//! switch record of the same interval (emitted when it came back), which
//! says how long it stayed off and whether it was preempted.
//!
//! Both records carry the switch-out time, stamped from the same kernel
//! clock read, so the pair is matched exactly on (thread, time). A thread
//! is off the CPU at most once at a time: a new stack of a thread whose
//! previous one never met its switch record (the record was lost) sends the
//! old one on with an unknown duration.

use crate::decode::RawStack;
use ingero_store::stacks::OFF_CPU_UNKNOWN;
use ingero_store::{HostEvent, HostKind};
use std::collections::HashMap;

/// Off-CPU stacks waiting for their switch record, by thread.
#[derive(Debug, Default)]
pub struct OffCpuJoin {
    waiting: HashMap<i32, RawStack>,
}

impl OffCpuJoin {
    /// An off-CPU stack arrived; returns a stack of the same thread that
    /// waited in vain (its duration unknown), if any.
    pub fn stack(&mut self, raw: RawStack) -> Option<RawStack> {
        let mut old = self.waiting.insert(raw.tid, raw)?;
        old.off_cpu_ns = OFF_CPU_UNKNOWN;
        Some(old)
    }

    /// A host record arrived: when it is the switch record of a waiting
    /// stack, returns that stack with its duration and state.
    pub fn host(&mut self, h: &HostEvent) -> Option<RawStack> {
        if h.kind != HostKind::SchedSwitch {
            return None;
        }
        let w = self.waiting.get(&h.tid)?;
        if w.ts_ns != h.ts_ns {
            return None;
        }
        let mut raw = self.waiting.remove(&h.tid)?;
        raw.off_cpu_ns = h.dur_ns;
        raw.state = h.arg;
        Some(raw)
    }

    /// Every stack still waiting (threads still off the CPU at the stop),
    /// with an unknown duration.
    pub fn drain(&mut self) -> Vec<RawStack> {
        self.waiting
            .drain()
            .map(|(_, mut r)| {
                r.off_cpu_ns = OFF_CPU_UNKNOWN;
                r
            })
            .collect()
    }

    /// Stacks waiting.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// True when none waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingero_store::StackKind;

    fn raw(tid: i32, ts_ns: i64) -> RawStack {
        RawStack {
            kind: StackKind::OffCpu,
            pid: 1,
            tid,
            cpu: 0,
            ts_ns,
            user: vec![1, 2],
            kernel: vec![],
            user_error: 0,
            off_cpu_ns: 0,
            state: -1,
        }
    }

    fn switch(tid: i32, ts_ns: i64, dur_ns: i64, arg: i64) -> HostEvent {
        HostEvent {
            ts_ns,
            pid: 1,
            tid,
            kind: HostKind::SchedSwitch,
            dur_ns,
            arg,
            cpu: 0,
            count: 1,
            bytes: 0,
        }
    }

    #[test]
    fn pairs_on_thread_and_switch_out_time() {
        let mut j = OffCpuJoin::default();
        assert!(j.stack(raw(7, 100)).is_none());
        assert!(j.host(&switch(7, 99, 5, 0)).is_none(), "another interval");
        let got = j.host(&switch(7, 100, 5_000, 1)).expect("joined");
        assert_eq!((got.off_cpu_ns, got.state), (5_000, 1));
        assert!(j.is_empty());
        assert!(j.stack(raw(8, 200)).is_none());
        let lost = j.stack(raw(8, 300)).expect("the older one goes on");
        assert_eq!((lost.ts_ns, lost.off_cpu_ns), (200, OFF_CPU_UNKNOWN));
        let rest = j.drain();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].off_cpu_ns, OFF_CPU_UNKNOWN);
    }
}
