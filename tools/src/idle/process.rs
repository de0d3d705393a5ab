//! One process's CUDA activity and the stretch of time its idle breakdown
//! covers: its raw calls and activity spans, its lifetime within the window,
//! and the first and last moments it was inside a CUDA call.

use crate::dataset::{Call, Dataset, Totals};
use ingero_store::activity::{ActivityKind, ActivitySpan};
use ingero_store::AggSource;
use std::collections::BTreeMap;

/// The calls and spans of one process and the bounds they give.
pub struct ProcessSpans<'a> {
    /// Process id.
    pub pid: i32,
    /// Its raw CUDA calls, in time order.
    pub calls: Vec<&'a Call>,
    /// Its activity spans, every kind.
    pub spans: Vec<&'a ActivitySpan>,
    /// Of those, the bursts of CUDA calls.
    pub bursts: Vec<&'a ActivitySpan>,
    /// Its CUDA aggregate totals (every call the recorder counted).
    pub agg: Totals,
    /// Lifetime within the window, `[lo, hi)`, at least 1 ns long.
    pub span: (i64, i64),
    /// Length of `span`, ns.
    pub span_ns: i64,
    /// Start of the first CUDA call, clamped to `span` (its end without one).
    pub first_call: i64,
    /// End of the last CUDA call, clamped to `span` (its start without one).
    pub last_call_end: i64,
}

impl<'a> ProcessSpans<'a> {
    /// Collects the process's CUDA activity; `None` when it has none at all.
    pub fn gather(ds: &'a Dataset, pid: i32) -> Option<ProcessSpans<'a>> {
        let calls: Vec<&Call> = ds.calls.iter().filter(|c| c.pid == pid).collect();
        let spans: Vec<&ActivitySpan> = ds.activity.iter().filter(|s| s.pid == pid).collect();
        let agg = ds.totals(AggSource::Cuda, None, Some(pid));
        if calls.is_empty() && spans.is_empty() && agg.count == 0 {
            return None;
        }
        let bursts: Vec<&ActivitySpan> = spans
            .iter()
            .copied()
            .filter(|s| s.kind == ActivityKind::Burst)
            .collect();
        let first_call = bursts
            .iter()
            .map(|s| s.start_ns)
            .min()
            .or_else(|| calls.first().map(|c| c.ts_ns));
        let last_call_end = bursts
            .iter()
            .map(|s| s.end_ns)
            .max()
            .or_else(|| calls.iter().map(|c| c.ts_ns + c.dur_ns).max());
        let span = lifetime(ds, pid, last_call_end);
        Some(ProcessSpans {
            pid,
            calls,
            spans,
            bursts,
            agg,
            span,
            span_ns: span.1 - span.0,
            first_call: first_call.unwrap_or(span.1).clamp(span.0, span.1),
            last_call_end: last_call_end.unwrap_or(span.0).clamp(span.0, span.1),
        })
    }

    /// The thread with most time inside CUDA calls, from the activity spans
    /// (raw rows where there are none).
    pub fn gpu_thread(&self, ds: &Dataset) -> i32 {
        let mut per_tid: BTreeMap<i32, i64> = BTreeMap::new();
        for s in self.spans.iter().filter(|s| s.kind == ActivityKind::Burst) {
            *per_tid.entry(s.tid).or_default() += s.api_ns();
        }
        per_tid
            .into_iter()
            .max_by_key(|(tid, t)| (*t, -tid))
            .map(|(tid, _)| tid)
            .or_else(|| ds.gpu_thread(self.pid))
            .unwrap_or(self.pid)
    }
}

/// The process's lifetime within the window and the capture, stretched to
/// the end of its last CUDA call, at least 1 ns long.
fn lifetime(ds: &Dataset, pid: i32, last_call_end: Option<i64>) -> (i64, i64) {
    let win = (ds.window.lo_ns, ds.window.hi_ns);
    let proc_info = ds.processes.get(&pid);
    // Held inside the window whatever the file says (a crafted or broken
    // first-seen time must not put the lifetime's start after its end).
    let lo = proc_info
        .map_or(win.0, |p| p.first_seen_ns)
        .max(win.0)
        .max(ds.span.start_ns)
        .min(win.1);
    let hi = proc_info
        .map_or(win.1, |p| p.last_seen_ns.max(p.first_seen_ns))
        .min(win.1)
        .max(last_call_end.unwrap_or(lo).min(win.1));
    (lo, hi.max(lo.saturating_add(1)))
}
