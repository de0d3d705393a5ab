//! The parts of the idle split in one table: for each state of the GPU
//! thread, its stable key (JSON, tool arguments, findings) and its label
//! (reports), in report order. Every list of parts is read from here.

use super::states::{State, STATES};
use ingero_store::activity::CallPart;

/// One part of the idle split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The thread state the part measures.
    pub state: State,
    /// Stable key (`off_cpu_blocked`, `host_compute`, ...).
    pub key: &'static str,
    /// Label in reports.
    pub label: &'static str,
}

const fn part(state: State, key: &'static str, label: &'static str) -> Part {
    Part { state, key, label }
}

/// Every part, in report order (the order of
/// [`crate::idle::HostWaitCauses::labelled`]).
pub const PARTS: [Part; STATES] = [
    part(
        State::BeforeFirst,
        "before_first_call",
        "before the first CUDA call",
    ),
    part(
        State::Inside(CallPart::Launch),
        "in_launch_calls",
        "inside kernel/graph launch calls",
    ),
    part(
        State::Inside(CallPart::AllocFree),
        "in_alloc_free",
        "inside allocation/free calls",
    ),
    part(
        State::Inside(CallPart::Copy),
        "in_copies",
        "inside copies/memsets",
    ),
    part(
        State::Inside(CallPart::Sync),
        "in_sync",
        "inside synchronisations",
    ),
    part(
        State::Inside(CallPart::Other),
        "in_other_cuda",
        "inside other CUDA calls",
    ),
    part(
        State::BetweenCalls,
        "between_calls",
        "between CUDA calls (< 1 ms apart)",
    ),
    part(State::Compute, "host_compute", "on-CPU outside CUDA"),
    part(
        State::Storm,
        "page_alloc_storm",
        "on-CPU during page-allocation storms",
    ),
    part(
        State::OffPreempted,
        "off_cpu_preempted",
        "off-CPU: preempted (run queue)",
    ),
    part(
        State::OffWorkers,
        "waiting_on_workers",
        "off-CPU: waiting on DataLoader workers",
    ),
    part(
        State::OffBlocked,
        "off_cpu_blocked",
        "off-CPU: blocked (I/O, locks, sleep)",
    ),
    part(
        State::OffUnknown,
        "off_cpu_unknown",
        "off-CPU: reason not recorded",
    ),
    part(
        State::AfterLast,
        "after_last_call",
        "after the last CUDA call",
    ),
];

/// Report-order position of `state`.
pub fn position(state: State) -> usize {
    PARTS
        .iter()
        .position(|p| p.state == state)
        .unwrap_or(PARTS.len() - 1)
}

/// The part of a state slot ([`State::index`]).
pub fn of_slot(slot: usize) -> &'static Part {
    PARTS
        .iter()
        .find(|p| p.state.index() == slot)
        .unwrap_or(&PARTS[PARTS.len() - 1])
}

/// The part with this key, if any.
pub fn by_key(key: &str) -> Option<&'static Part> {
    PARTS.iter().find(|p| p.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_slot_has_one_part() {
        let mut seen = [false; STATES];
        for p in PARTS {
            assert!(!seen[p.state.index()], "{} twice", p.key);
            seen[p.state.index()] = true;
        }
        assert!(seen.iter().all(|s| *s));
    }
}
