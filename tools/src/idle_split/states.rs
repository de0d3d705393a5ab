//! What the GPU-driving thread was doing, moment by moment, and how GPU-idle
//! time is shared out among those states.
//!
//! The thread's time is cut into segments: before the process's first CUDA
//! call, bursts of CUDA calls (a mix of time inside calls per part and host
//! time between calls less than 1 ms apart), off-CPU by reason, on-CPU
//! outside CUDA (during a page-allocation storm or not), after the last call.
//! An idle piece (a stretch of time with an amount of GPU idleness in it) is
//! shared among the states present in its stretch in proportion to their
//! time, except that time inside synchronisations takes a share only once
//! every other state is full: a thread waiting in a sync is usually waiting
//! for the GPU to finish, so idleness in that stretch is the other states'.

use crate::intervals::overlap;
use ingero_store::activity::CallPart;

/// A state of the GPU-driving thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Before the process's first CUDA call.
    BeforeFirst,
    /// After the process's last CUDA call.
    AfterLast,
    /// Inside a CUDA call of this part.
    Inside(CallPart),
    /// Host time between calls of one burst (gaps under 1 ms).
    BetweenCalls,
    /// Off-CPU after a preemption.
    OffPreempted,
    /// Blocked while DataLoader workers were alive.
    OffWorkers,
    /// Blocked otherwise.
    OffBlocked,
    /// Off-CPU, reason not recorded.
    OffUnknown,
    /// On-CPU outside CUDA during a page-allocation storm.
    Storm,
    /// On-CPU outside CUDA otherwise.
    Compute,
}

/// Number of states.
pub const STATES: usize = 14;

impl State {
    /// Slot in a share vector.
    pub fn index(self) -> usize {
        match self {
            State::BeforeFirst => 0,
            State::AfterLast => 1,
            State::Inside(p) => 2 + p.index(),
            State::BetweenCalls => 7,
            State::OffPreempted => 8,
            State::OffWorkers => 9,
            State::OffBlocked => 10,
            State::OffUnknown => 11,
            State::Storm => 12,
            State::Compute => 13,
        }
    }
}

/// Slot of time inside synchronisations.
const SYNC_SLOT: usize = 2 + CallPart::Sync as usize;

/// A stretch of the thread's time with the share of each state in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    /// Start, epoch ns.
    pub start: i64,
    /// End, epoch ns.
    pub end: i64,
    /// Share of the stretch per state slot (sums to 1).
    pub mix: [f64; STATES],
}

impl Segment {
    /// A stretch spent in one state.
    pub fn pure(start: i64, end: i64, s: State) -> Segment {
        let mut mix = [0.0; STATES];
        mix[s.index()] = 1.0;
        Segment { start, end, mix }
    }
}

/// Shares `pieces` (start, end, idle ns in that stretch) among the states of
/// time-ordered, disjoint `segments`; returns ns per state slot.
pub fn attribute(segments: &[Segment], pieces: &[(i64, i64, f64)]) -> [f64; STATES] {
    total(&attribute_by_segment(segments, pieces))
}

/// Ns per state slot over every segment of an [`attribute_by_segment`] answer.
pub fn total(per_segment: &[(usize, [f64; STATES])]) -> [f64; STATES] {
    let mut out = [0.0; STATES];
    for (_, per_state) in per_segment {
        for (o, v) in out.iter_mut().zip(per_state) {
            *o += v;
        }
    }
    out
}

/// The same sharing as [`attribute`], kept per segment: `(segment index,
/// idle ns per state slot in it)` for every segment that received idle
/// time, by index. Summed over segments it is [`attribute`]'s answer.
pub fn attribute_by_segment(
    segments: &[Segment],
    pieces: &[(i64, i64, f64)],
) -> Vec<(usize, [f64; STATES])> {
    let mut out: std::collections::BTreeMap<usize, [f64; STATES]> = Default::default();
    let mut first = 0usize;
    for &(a, b, amount) in pieces {
        if amount <= 0.0 || b <= a {
            continue;
        }
        while first < segments.len() && segments[first].end <= a {
            first += 1;
        }
        let mut w = [0.0; STATES];
        let mut touched: Vec<(usize, f64)> = Vec::new();
        for (i, s) in segments[first..]
            .iter()
            .enumerate()
            .take_while(|(_, s)| s.start < b)
        {
            let o = overlap((a, b), (s.start, s.end)) as f64;
            if o > 0.0 {
                touched.push((first + i, o));
            }
            for (slot, m) in w.iter_mut().zip(&s.mix) {
                *slot += o * m;
            }
        }
        let sync_w = w[SYNC_SLOT];
        let rest: f64 = w.iter().sum::<f64>() - sync_w;
        if rest <= 0.0 && sync_w <= 0.0 {
            // The thread's timeline does not reach here: say nothing about it.
            continue;
        }
        let to_rest = amount.min(rest);
        let to_sync = (amount - to_rest).min(sync_w).max(0.0);
        for (i, o) in touched {
            let mix = &segments[i].mix;
            let slot = out.entry(i).or_insert([0.0; STATES]);
            for (k, v) in slot.iter_mut().enumerate() {
                let share = o * mix[k];
                if k == SYNC_SLOT {
                    if sync_w > 0.0 {
                        *v += to_sync * share / sync_w;
                    }
                } else if rest > 0.0 {
                    *v += to_rest * share / rest;
                }
            }
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_time_takes_idleness_last() {
        let mut burst = Segment::pure(0, 100, State::Compute);
        burst.mix = [0.0; STATES];
        burst.mix[State::Inside(CallPart::Sync).index()] = 0.5;
        burst.mix[State::BetweenCalls.index()] = 0.5;
        // 100 ns, half in a sync, half between calls; 30 ns of it idle.
        let got = attribute(&[burst.clone()], &[(0, 100, 30.0)]);
        assert!((got[State::BetweenCalls.index()] - 30.0).abs() < 1e-9);
        assert_eq!(got[State::Inside(CallPart::Sync).index()], 0.0);
        // 80 ns idle: 50 between calls, the other 30 while in the sync.
        let got = attribute(&[burst], &[(0, 100, 80.0)]);
        assert!((got[State::BetweenCalls.index()] - 50.0).abs() < 1e-9);
        assert!((got[State::Inside(CallPart::Sync).index()] - 30.0).abs() < 1e-9);
    }

    #[test]
    fn idleness_goes_to_the_states_in_its_stretch() {
        let segs = vec![
            Segment::pure(0, 10, State::BeforeFirst),
            Segment::pure(10, 20, State::OffBlocked),
            Segment::pure(20, 40, State::Compute),
        ];
        let got = attribute(&segs, &[(5, 15, 10.0), (20, 40, 10.0)]);
        assert_eq!(got[State::BeforeFirst.index()], 5.0);
        assert_eq!(got[State::OffBlocked.index()], 5.0);
        assert_eq!(got[State::Compute.index()], 10.0);
    }
}
