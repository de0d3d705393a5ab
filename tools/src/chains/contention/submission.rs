//! How busy the GPU thread of the main process kept the GPU inside a time
//! span, from its raw CUDA calls: the host-side stand-in for GPU idle where
//! the capture has no NVML samples.

use super::super::context::Context;
use ingero_store::AggSource;

/// How busy the GPU thread kept the GPU inside a time span.
pub struct SubmissionGap {
    /// Raw CUDA calls of the main process in the span.
    pub calls: i64,
    /// Longest stretch without a call in progress, ns.
    pub max_gap_ns: i64,
    /// Share of the span with no CUDA call in progress.
    pub idle_share: f64,
}

/// The main process's calls inside `span`: how many, the longest stretch
/// without one, and the share of the span with none in progress.
pub fn submission_gap(ctx: &Context, span: (i64, i64)) -> SubmissionGap {
    let len = (span.1 - span.0).max(1);
    let mut busy = 0i64;
    let mut calls = 0i64;
    let mut max_gap = 0i64;
    let mut cursor = span.0;
    for c in ctx.main_calls() {
        let (a, b) = (c.ts_ns.max(span.0), (c.ts_ns + c.dur_ns).min(span.1));
        if b < span.0 || a > span.1 {
            continue;
        }
        calls += 1;
        max_gap = max_gap.max(a - cursor);
        if b > cursor {
            busy += b - a.max(cursor);
            cursor = b;
        }
    }
    max_gap = max_gap.max(span.1 - cursor);
    SubmissionGap {
        calls,
        max_gap_ns: max_gap,
        idle_share: 1.0 - (scaled_for_sampling(ctx, busy) as f64 / len as f64).min(1.0),
    }
}

/// When the recorder kept only a sample of the calls, scales the busy time
/// by how much the totals exceed the kept rows.
fn scaled_for_sampling(ctx: &Context, busy: i64) -> i64 {
    let Some(main) = ctx.main else {
        return busy;
    };
    let totals = ctx.ds.totals(AggSource::Cuda, None, Some(main));
    if totals.count > totals.stored {
        let raw: i64 = ctx.main_calls().map(|c| c.dur_ns).sum();
        if raw > 0 {
            return (busy as f64 * totals.sum_dur_ns as f64 / raw as f64) as i64;
        }
    }
    busy
}
