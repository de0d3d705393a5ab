//! The host-side upper bound on GPU busy: the stretches where the process
//! was inside a CUDA call or had queued work outstanding, plus the time of
//! calls the recorder counted but could not place in time.

use super::process::ProcessSpans;
use crate::activity::ActivityOrigin;
use crate::dataset::Dataset;
use crate::intervals::{gaps, total, union};
use ingero_store::AggSource;

/// The host-side bound of one process.
pub struct HostBound {
    /// Stretches with CUDA activity of the process, merged, within its span.
    pub busy: Vec<(i64, i64)>,
    /// The stretches between them (no call, no queued work).
    pub gaps: Vec<(i64, i64)>,
    /// Time inside calls that were counted but not placed in time, ns.
    pub unplaced_ns: i64,
    /// The bound on busy, ns: `busy` plus `unplaced_ns`, at most the span.
    pub busy_ns: i64,
}

impl HostBound {
    /// The bound over the process's span, with its caveats added to `basis`.
    pub fn of(ds: &Dataset, p: &ProcessSpans, basis: &mut Vec<String>) -> HostBound {
        let busy = union(
            p.spans.iter().map(|s| (s.start_ns, s.end_ns)).collect(),
            p.span,
        );
        let unplaced_ns = unplaced_ns(ds, p, basis);
        if ds.activity_origin == ActivityOrigin::Recorded {
            basis.push(
                "activity spans recorded from every CUDA call (exact whatever the raw-row sampling)"
                    .to_string(),
            );
        }
        HostBound {
            busy_ns: (total(&busy) + unplaced_ns).min(p.span_ns),
            gaps: gaps(&busy, p.span),
            busy,
            unplaced_ns,
        }
    }
}

/// Calls the recorder counted but did not keep cannot be placed in time
/// when the spans come from raw rows: their time, ns, counts as busy anyway
/// (and `basis` says so).
fn unplaced_ns(ds: &Dataset, p: &ProcessSpans, basis: &mut Vec<String>) -> i64 {
    let sampled_away = p.agg.count > p.agg.stored;
    if ds.activity_origin != ActivityOrigin::FromRawRows || !sampled_away {
        return 0;
    }
    let raw_api: i64 = p.calls.iter().filter(|c| !c.nested).map(|c| c.dur_ns).sum();
    let outer: i64 = ds
        .aggs
        .iter()
        .filter(|a| a.source == AggSource::Cuda && a.pid == p.pid)
        .map(|a| a.outer_dur_ns())
        .sum();
    let extra = (outer - raw_api).max(0);
    basis.push(format!(
        "{} calls were counted but not kept as raw rows and this file has no recorded activity spans: their {} ns inside CUDA count as busy but cannot be placed in time, and gaps are upper bounds",
        p.agg.count - p.agg.stored,
        extra
    ));
    extra
}
