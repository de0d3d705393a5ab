//! Shares each idle part among the code the GPU thread was in during
//! exactly the stretches that part was made of.
//!
//! Off-CPU stretches are exact: each is one switch-out, whose stack was
//! taken at that moment, so its idle time goes to that stack whole. On-CPU
//! stretches (work outside CUDA, bursts of calls) are sampled: each on-CPU
//! sample inside a stretch stands for one sample period of it, weighted by
//! how idle the GPU was there; a part's idle time is then shared in
//! proportion to those weights. Python frames come from the Python sample
//! nearest in time inside the same stretch.

use super::path::{reduce, CodePath};
use crate::idle_split::states::{Segment, STATES};
use ingero_store::thread_samples::ThreadSample;
use ingero_store::StackKind;
use std::collections::BTreeMap;

/// Python samples further than this from a native sample are not paired.
const PAIR_NS: i64 = 25_000_000;
/// Sample period assumed when the thread's samples do not show one.
const DEFAULT_PERIOD_NS: i64 = 10_101_010;

/// Weight per code path for one state slot, and how many samples or
/// stretches gave it.
#[derive(Debug, Default, Clone)]
pub struct SlotCode {
    /// Idle ns (exact off-CPU, sampled estimate on-CPU) per path.
    pub by_path: BTreeMap<CodePath, (f64, u32)>,
    /// Idle ns of this slot that had a stack to read.
    pub covered: f64,
}

/// The thread's samples split by kind, each sorted by time.
pub struct Samples<'a> {
    on_cpu: Vec<&'a ThreadSample>,
    off_cpu: Vec<&'a ThreadSample>,
    python: Vec<&'a ThreadSample>,
    period_ns: i64,
}

impl<'a> Samples<'a> {
    /// Splits `all` (sorted by time) by kind and estimates the on-CPU period.
    pub fn of(all: &'a [ThreadSample]) -> Samples<'a> {
        let pick =
            |k: StackKind| -> Vec<&ThreadSample> { all.iter().filter(|s| s.kind == k).collect() };
        let on_cpu = pick(StackKind::OnCpu);
        let mut gaps: Vec<i64> = on_cpu
            .windows(2)
            .map(|w| w[1].ts_ns.saturating_sub(w[0].ts_ns))
            .filter(|g| *g > 0 && *g < 50_000_000)
            .collect();
        gaps.sort_unstable();
        let period_ns = gaps
            .get(gaps.len() / 2)
            .copied()
            .unwrap_or(DEFAULT_PERIOD_NS)
            .max(1);
        Samples {
            on_cpu,
            off_cpu: pick(StackKind::OffCpu),
            python: pick(StackKind::Python),
            period_ns,
        }
    }

    /// True when there is no stack of any kind.
    pub fn is_empty(&self) -> bool {
        self.on_cpu.is_empty() && self.off_cpu.is_empty() && self.python.is_empty()
    }

    /// On-CPU samples of `[a, b)`.
    fn on_cpu_in(&self, a: i64, b: i64) -> &[&'a ThreadSample] {
        let lo = self.on_cpu.partition_point(|s| s.ts_ns < a);
        let hi = self.on_cpu.partition_point(|s| s.ts_ns < b);
        &self.on_cpu[lo..hi]
    }

    /// Active Python samples of `[a, b)` (the sampler's idle ones are the
    /// thread blocked: not on-CPU work).
    fn python_active_in(&self, a: i64, b: i64) -> Vec<&'a ThreadSample> {
        let lo = self.python.partition_point(|s| s.ts_ns < a);
        let hi = self.python.partition_point(|s| s.ts_ns < b);
        self.python[lo..hi]
            .iter()
            .copied()
            .filter(|s| s.state != 0)
            .collect()
    }

    /// The off-CPU sample whose stretch holds `t`.
    fn off_cpu_at(&self, t: i64) -> Option<&'a ThreadSample> {
        let i = self.off_cpu.partition_point(|s| s.ts_ns <= t);
        self.off_cpu[..i]
            .iter()
            .rev()
            .take(4)
            .find(|s| s.off_cpu_ns < 0 || s.ts_ns.saturating_add(s.off_cpu_ns) >= t)
            .copied()
    }

    /// Off-CPU samples reaching into `[a, b)`, with the length of the overlap.
    fn off_cpu_over(&self, a: i64, b: i64) -> Vec<(&'a ThreadSample, i64)> {
        let i = self.off_cpu.partition_point(|s| s.ts_ns < b);
        let mut out = Vec::new();
        for s in self.off_cpu[..i].iter().rev().take(64) {
            let end = if s.off_cpu_ns < 0 {
                b
            } else {
                s.ts_ns.saturating_add(s.off_cpu_ns)
            };
            let o = end.min(b).saturating_sub(s.ts_ns.max(a));
            if o > 0 {
                out.push((*s, o));
            }
            if end <= a && s.ts_ns.saturating_add(1_000_000_000) < a {
                break;
            }
        }
        out
    }

    /// The Python sample nearest `t` within `[a - PAIR_NS, b + PAIR_NS]`,
    /// preferring one inside `[a, b)`.
    fn python_near(&self, t: i64, a: i64, b: i64) -> Option<&'a ThreadSample> {
        let (lo, hi) = (a.saturating_sub(PAIR_NS), b.saturating_add(PAIR_NS));
        let i = self.python.partition_point(|s| s.ts_ns < t);
        let mut best: Option<(bool, u64, &ThreadSample)> = None;
        for s in self.python[i.saturating_sub(3)..(i + 3).min(self.python.len())].iter() {
            if s.ts_ns < lo || s.ts_ns > hi {
                continue;
            }
            let key = (!(s.ts_ns >= a && s.ts_ns < b), s.ts_ns.abs_diff(t));
            if best.is_none_or(|(x, y, _)| key < (x, y)) {
                best = Some((key.0, key.1, s));
            }
        }
        best.map(|b| b.2)
    }
}

/// Off-CPU states (one switch-out per segment).
fn is_off(slot: usize) -> bool {
    use crate::idle_split::states::State;
    [
        State::OffPreempted,
        State::OffWorkers,
        State::OffBlocked,
        State::OffUnknown,
    ]
    .iter()
    .any(|s| s.index() == slot)
}

/// Idle ns per state slot and code path, from the per-segment idle shares.
pub fn by_slot(
    segments: &[Segment],
    per_segment: &[(usize, [f64; STATES])],
    samples: &Samples,
) -> Vec<SlotCode> {
    let mut out: Vec<SlotCode> = vec![SlotCode::default(); STATES];
    for (i, idle) in per_segment {
        let seg = &segments[*i];
        let len = seg.end.saturating_sub(seg.start).max(1) as f64;
        for (slot, amount) in idle.iter().enumerate() {
            if *amount <= 0.0 {
                continue;
            }
            let acc = &mut out[slot];
            if is_off(slot) {
                let mid = seg.start + seg.end.saturating_sub(seg.start) / 2;
                let path = match samples.off_cpu_at(mid) {
                    Some(off) => {
                        let py = samples.python_near(mid, seg.start, seg.end);
                        acc.covered += amount;
                        reduce(&off.frames, py.map_or(&[][..], |p| &p.frames[..]))
                    }
                    None => CodePath::default(),
                };
                let e = acc.by_path.entry(path).or_insert((0.0, 0));
                e.0 += amount;
                e.1 += 1;
                continue;
            }
            // Sampled: each on-CPU sample stands for one period of the
            // stretch at its idle density.
            let density = amount / len;
            let weight = density * samples.period_ns as f64;
            let natives = samples.on_cpu_in(seg.start, seg.end);
            if !natives.is_empty() {
                for s in natives {
                    let py = samples.python_near(s.ts_ns, seg.start, seg.end);
                    let path = reduce(&s.frames, py.map_or(&[][..], |p| &p.frames[..]));
                    let e = acc.by_path.entry(path).or_insert((0.0, 0));
                    e.0 += weight;
                    e.1 += 1;
                    acc.covered += weight;
                }
            }
            for (off, o) in samples.off_cpu_over(seg.start, seg.end) {
                let mid = off.ts_ns.max(seg.start);
                let py = samples.python_near(mid, seg.start, seg.end);
                let path = reduce(&off.frames, py.map_or(&[][..], |p| &p.frames[..]));
                let w = density * o as f64;
                let e = acc.by_path.entry(path).or_insert((0.0, 0));
                e.0 += w;
                e.1 += 1;
                acc.covered += w;
            }
            if natives.is_empty() && samples.on_cpu.is_empty() {
                // No native sampler in this capture: the Python samples
                // stand alone.
                for s in samples.python_active_in(seg.start, seg.end) {
                    let path = reduce(&[], &s.frames);
                    let e = acc.by_path.entry(path).or_insert((0.0, 0));
                    e.0 += weight;
                    e.1 += 1;
                    acc.covered += weight;
                }
            }
        }
    }
    out
}
