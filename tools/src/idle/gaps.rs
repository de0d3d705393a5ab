//! Long idle gaps and utilisation over the lifetime: the figures the
//! Nsight-style `gpu_gaps` and `gpu_time_utilization` rules are read from.

use super::gap::{IdleGap, GAP_THRESHOLD_NS};
use super::utilization::{Utilization, UTILIZATION_CHUNKS, UTILIZATION_LOW};
use crate::gpu_activity::MeasuredBusy;
use crate::intervals::{gaps, inside, overlap, union};

/// Idle gaps of at least [`GAP_THRESHOLD_NS`].
pub struct LongGaps {
    /// Measured zero-busy runs where sampled, else the host gaps; longest first.
    pub gaps: Vec<(i64, i64)>,
    /// Host gaps (no call, no queued work) of that length, by start.
    pub host: Vec<(i64, i64)>,
}

impl LongGaps {
    /// The long gaps, from the samples when there are any and from the
    /// host-side bound's gaps otherwise.
    pub fn of(bound_gaps: &[(i64, i64)], measured: Option<&MeasuredBusy>) -> LongGaps {
        let host: Vec<(i64, i64)> = bound_gaps
            .iter()
            .copied()
            .filter(|(a, b)| b - a >= GAP_THRESHOLD_NS)
            .collect();
        let mut gaps: Vec<(i64, i64)> = match measured {
            Some(m) => zero_runs(m)
                .into_iter()
                .filter(|(a, b)| b - a >= GAP_THRESHOLD_NS)
                .collect(),
            None => host.clone(),
        };
        gaps.sort_by_key(|g| std::cmp::Reverse(g.1 - g.0));
        LongGaps { gaps, host }
    }

    /// Their total, ns.
    pub fn total_ns(&self) -> i64 {
        self.gaps.iter().map(|(a, b)| b - a).sum()
    }

    /// The five longest, placed relative to the capture's start.
    pub fn longest(&self, capture_start_ns: i64) -> Vec<IdleGap> {
        self.gaps
            .iter()
            .take(5)
            .map(|(a, b)| IdleGap {
                start_offset_s: (a - capture_start_ns) as f64 / 1e9,
                dur_ns: b - a,
            })
            .collect()
    }
}

/// Runs of sample periods at 0% busy, adjacent ones merged.
fn zero_runs(m: &MeasuredBusy) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for p in m.periods.iter().filter(|p| p.busy <= 0.0) {
        match out.last_mut() {
            Some(last) if p.start_ns <= last.1 => last.1 = last.1.max(p.end_ns),
            _ => out.push((p.start_ns, p.end_ns)),
        }
    }
    out
}

/// Busy share over equal chunks of the span, from the samples where they
/// cover a chunk and from the host-side bound elsewhere.
pub fn utilization(
    span: (i64, i64),
    bound: &[(i64, i64)],
    m: Option<&MeasuredBusy>,
) -> Utilization {
    let n = UTILIZATION_CHUNKS;
    let width = ((span.1 - span.0) / n as i64).max(1);
    let mut busy_share = Vec::with_capacity(n);
    let covered: Vec<(i64, i64)> = m.map_or_else(Vec::new, |m| {
        union(
            m.periods.iter().map(|p| (p.start_ns, p.end_ns)).collect(),
            span,
        )
    });
    for i in 0..n as i64 {
        let c = (span.0 + i * width, span.0 + (i + 1) * width);
        let mut b = 0.0;
        if let Some(m) = m {
            for p in &m.periods {
                b += overlap((p.start_ns, p.end_ns), c) as f64 * p.busy;
            }
            for (a, z) in gaps(&covered, c) {
                b += inside(bound, (a, z)) as f64;
            }
        } else {
            b = inside(bound, c) as f64;
        }
        busy_share.push((b / width as f64).clamp(0.0, 1.0));
    }
    Utilization {
        chunks: n,
        low_chunks: busy_share.iter().filter(|b| **b < UTILIZATION_LOW).count(),
        busy_share,
        basis: if m.is_some() {
            "NVML samples".to_string()
        } else {
            "host-side upper bound".to_string()
        },
    }
}
