//! Where the GPU-idle time of a process went: the idle split, one total
//! per part.

use crate::idle_split::parts;
use crate::idle_split::states::{State, STATES};
use serde::Serialize;

/// Page-allocation rate (bytes/s) from which on-CPU host wait is blamed on a storm.
pub(super) const STORM_RATE: f64 = 256.0 * 1024.0 * 1024.0;

/// Where GPU-idle time went, ns: what the GPU-driving thread was doing
/// while the GPU had no work from this process. The parts add up to the
/// idle time (`host_wait_ns`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HostWaitCauses {
    /// Before the process's first CUDA call (start-up, imports, data loading).
    pub before_first_call_ns: i64,
    /// Thread inside kernel or graph launch calls (launch-bound: the GPU
    /// finishes each kernel before the next is queued).
    pub in_launch_calls_ns: i64,
    /// Thread inside allocation or free calls (host time, not GPU work).
    pub in_alloc_free_ns: i64,
    /// Thread inside copies or memsets.
    pub in_copies_ns: i64,
    /// Thread inside synchronisations while the GPU was idle.
    pub in_sync_ns: i64,
    /// Thread inside other CUDA calls (events, queries, setup).
    pub in_other_cuda_ns: i64,
    /// Host time between CUDA calls less than 1 ms apart.
    pub between_calls_ns: i64,
    /// GPU thread off-CPU after a preemption (waiting in the run queue).
    pub off_cpu_preempted_ns: i64,
    /// GPU thread blocked while DataLoader workers were alive (waiting on them).
    pub waiting_on_workers_ns: i64,
    /// GPU thread blocked for another reason (I/O, locks, sleeps).
    pub off_cpu_blocked_ns: i64,
    /// GPU thread off-CPU, recorder did not say whether preempted or blocked.
    pub off_cpu_unknown_ns: i64,
    /// GPU thread on-CPU outside CUDA during a page-allocation storm of its process.
    pub page_alloc_storm_ns: i64,
    /// GPU thread on-CPU outside CUDA otherwise (Python-side work: input
    /// preparation, compilation, anything not in a CUDA call).
    pub host_compute_ns: i64,
    /// After the process's last recorded CUDA call.
    pub after_last_call_ns: i64,
}

impl HostWaitCauses {
    pub(super) fn from_shares(s: &[f64; STATES]) -> HostWaitCauses {
        let mut out = HostWaitCauses::default();
        for p in parts::PARTS {
            *out.at_mut(p.state) = s[p.state.index()].round() as i64;
        }
        out
    }

    /// The part of one thread state, ns.
    pub fn at(&self, state: State) -> i64 {
        let mut copy = *self;
        *copy.at_mut(state)
    }

    fn at_mut(&mut self, state: State) -> &mut i64 {
        use ingero_store::activity::CallPart;
        match state {
            State::BeforeFirst => &mut self.before_first_call_ns,
            State::AfterLast => &mut self.after_last_call_ns,
            State::Inside(CallPart::Launch) => &mut self.in_launch_calls_ns,
            State::Inside(CallPart::AllocFree) => &mut self.in_alloc_free_ns,
            State::Inside(CallPart::Copy) => &mut self.in_copies_ns,
            State::Inside(CallPart::Sync) => &mut self.in_sync_ns,
            State::Inside(CallPart::Other) => &mut self.in_other_cuda_ns,
            State::BetweenCalls => &mut self.between_calls_ns,
            State::OffPreempted => &mut self.off_cpu_preempted_ns,
            State::OffWorkers => &mut self.waiting_on_workers_ns,
            State::OffBlocked => &mut self.off_cpu_blocked_ns,
            State::OffUnknown => &mut self.off_cpu_unknown_ns,
            State::Storm => &mut self.page_alloc_storm_ns,
            State::Compute => &mut self.host_compute_ns,
        }
    }

    /// Every part with its label, in report order ([`parts::PARTS`]).
    pub fn labelled(&self) -> [(&'static str, i64); STATES] {
        parts::PARTS.map(|p| (p.label, self.at(p.state)))
    }

    /// The parts by state slot ([`crate::idle_split::states::State::index`]).
    pub fn by_slot(&self) -> [i64; STATES] {
        let mut out = [0i64; STATES];
        for p in parts::PARTS {
            out[p.state.index()] = self.at(p.state);
        }
        out
    }

    /// Sum of the parts.
    pub fn sum(&self) -> i64 {
        self.labelled().iter().map(|(_, v)| v).sum()
    }

    /// Off-CPU parts together.
    pub fn off_cpu_ns(&self) -> i64 {
        self.off_cpu_preempted_ns
            + self.waiting_on_workers_ns
            + self.off_cpu_blocked_ns
            + self.off_cpu_unknown_ns
    }

    pub(super) fn largest_mut(&mut self) -> &mut i64 {
        let largest = parts::PARTS
            .iter()
            .max_by_key(|p| self.at(p.state))
            .map_or(State::BeforeFirst, |p| p.state);
        self.at_mut(largest)
    }
}
