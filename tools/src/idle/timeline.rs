//! Builds the GPU-driving thread's state segments ([`crate::idle_split::states`]) from
//! its activity spans, context switches and the process's page-allocation
//! storms.

use crate::idle_split::states::{Segment, State, STATES};
use crate::rows::HostRow;
use ingero_store::activity::{ActivitySpan, CallPart};

/// What the segments are built from.
pub struct ThreadFacts<'a> {
    /// The process's lifetime in the window.
    pub span: (i64, i64),
    /// Start of the process's first CUDA call (any thread).
    pub first_call: i64,
    /// End of its last CUDA call (any thread).
    pub last_call_end: i64,
    /// Bursts of the GPU-driving thread, by start.
    pub bursts: Vec<&'a ActivitySpan>,
    /// Its context switches (off-CPU intervals `[ts, ts + dur]`), by time.
    pub switches: Vec<&'a HostRow>,
    /// Lifetimes of the process's DataLoader workers.
    pub workers: Vec<(i64, i64)>,
    /// Starts of the aggregate buckets with a page-allocation storm, sorted.
    pub storm_buckets: Vec<i64>,
    /// Width of those buckets, ns.
    pub bucket_ns: i64,
}

impl ThreadFacts<'_> {
    fn off_state(&self, h: &HostRow) -> State {
        match h.arg {
            1 => State::OffPreempted,
            0 if self
                .workers
                .iter()
                .any(|(a, b)| h.ts_ns >= *a && h.ts_ns <= *b) =>
            {
                State::OffWorkers
            }
            0 => State::OffBlocked,
            _ => State::OffUnknown,
        }
    }

    /// On-CPU time outside CUDA over `[a, b)`, cut at storm buckets.
    fn on_cpu(&self, a: i64, b: i64, out: &mut Vec<Segment>) {
        let mut cursor = a;
        let first = self
            .storm_buckets
            .partition_point(|s| s + self.bucket_ns <= a);
        for &s in self.storm_buckets[first..].iter().take_while(|s| **s < b) {
            let (sa, sb) = (s.max(cursor), (s + self.bucket_ns).min(b));
            if sa > cursor {
                out.push(Segment::pure(cursor, sa, State::Compute));
            }
            if sb > sa {
                out.push(Segment::pure(sa, sb, State::Storm));
                cursor = sb;
            }
        }
        if b > cursor {
            out.push(Segment::pure(cursor, b, State::Compute));
        }
    }

    /// Time outside CUDA over `[a, b)`: off-CPU pieces and on-CPU between them.
    fn outside(&self, a: i64, b: i64, sw: &mut usize, out: &mut Vec<Segment>) {
        while *sw > 0 && self.switches[*sw - 1].ts_ns + self.switches[*sw - 1].dur_ns > a {
            *sw -= 1;
        }
        let mut cursor = a;
        let mut j = *sw;
        while j < self.switches.len() && self.switches[j].ts_ns < b {
            let h = self.switches[j];
            let (oa, ob) = (h.ts_ns.max(cursor), (h.ts_ns + h.dur_ns).min(b));
            if ob > oa {
                if oa > cursor {
                    self.on_cpu(cursor, oa, out);
                }
                out.push(Segment::pure(oa, ob, self.off_state(h)));
                cursor = ob;
            }
            j += 1;
        }
        *sw = j.saturating_sub(1);
        if b > cursor {
            self.on_cpu(cursor, b, out);
        }
    }

    /// A burst of calls over `[a, z)` with its state `mix`, less the
    /// stretches where the thread was preempted inside it: a thread waiting
    /// in the run queue is not working in its calls, whatever call it was in.
    /// (Blocked stretches stay in the burst: a thread blocked inside a
    /// synchronisation is waiting for the GPU, which the mix already says.)
    fn burst(&self, a: i64, z: i64, mix: [f64; STATES], out: &mut Vec<Segment>) {
        let first = self
            .switches
            .partition_point(|h| h.ts_ns.saturating_add(h.dur_ns) <= a);
        let mut cursor = a;
        for h in self.switches[first..].iter().take_while(|h| h.ts_ns < z) {
            if h.arg != 1 {
                continue;
            }
            let (oa, ob) = (h.ts_ns.max(cursor), h.ts_ns.saturating_add(h.dur_ns).min(z));
            if ob <= oa {
                continue;
            }
            if oa > cursor {
                out.push(Segment {
                    start: cursor,
                    end: oa,
                    mix,
                });
            }
            out.push(Segment::pure(oa, ob, State::OffPreempted));
            cursor = ob;
        }
        if z > cursor {
            out.push(Segment {
                start: cursor,
                end: z,
                mix,
            });
        }
    }

    /// The segments, time-ordered and disjoint, covering the span.
    pub fn segments(&self) -> Vec<Segment> {
        let (lo, hi) = self.span;
        let mut out = Vec::new();
        let active = (
            self.first_call.clamp(lo, hi),
            self.last_call_end.clamp(lo, hi),
        );
        if active.0 > lo {
            out.push(Segment::pure(lo, active.0, State::BeforeFirst));
        }
        let mut cursor = active.0;
        let mut sw = 0usize;
        for b in &self.bursts {
            let (a, z) = (b.start_ns.max(cursor), b.end_ns.min(active.1));
            if z <= a {
                continue;
            }
            if a > cursor {
                self.outside(cursor, a, &mut sw, &mut out);
            }
            let len = b.len_ns().max(1) as f64;
            let mut mix = [0.0; STATES];
            let mut api = 0.0;
            for p in CallPart::ALL {
                let share = b.parts[p.index()] as f64 / len;
                mix[State::Inside(p).index()] = share;
                api += share;
            }
            if api > 1.0 {
                for m in mix.iter_mut() {
                    *m /= api;
                }
            } else {
                mix[State::BetweenCalls.index()] = 1.0 - api;
            }
            self.burst(a, z, mix, &mut out);
            cursor = z;
        }
        if active.1 > cursor {
            self.outside(cursor, active.1, &mut sw, &mut out);
        }
        let tail = cursor.max(active.1);
        if hi > tail {
            out.push(Segment::pure(tail, hi, State::AfterLast));
        }
        out
    }
}
