//! The GPU idle a synchronisation in the loop causes: after each
//! synchronisation returns, the stream has nothing queued until the thread
//! enqueues its next piece of work (the refill, from the synchronisation's
//! return to the end of the next call that enqueues work). Without the
//! synchronisation the GPU could have spent that time on the work queued
//! before it, so what the synchronisation costs per step is the refill, at most
//! the GPU time of the step it waited for. Idle later in the step (a
//! launch-bound stretch, host compute between launches) and a refill longer
//! than the step's GPU work (the host doing something else for long) belong to
//! other mechanisms.
//!
//! Measured on the GPU thread's raw rows. Where the capture kept only a sample
//! of an op's rows in a time bucket (the first N), a refill is measured only
//! before the bucket's first dropped row, where the row sequence is whole; the
//! mean over the measured refills stands for every synchronisation.

use crate::dataset::{Call, Dataset, SampledOps};
use crate::idle::ProcessIdle;
use ingero_store::OpClass;
use std::collections::BTreeMap;

/// What the refills after synchronisations cost the GPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SyncRefill {
    /// Synchronisations whose refill was measured.
    pub measured: usize,
    /// Mean GPU idle per synchronisation that overlap would have saved, ns.
    pub idle_per_sync_ns: f64,
    /// That mean times every synchronisation of the thread, ns.
    pub idle_ns: i64,
}

/// True for a call that puts work on the GPU.
fn enqueues(class: OpClass) -> bool {
    matches!(
        class,
        OpClass::Launch | OpClass::GraphLaunch | OpClass::Copy | OpClass::Other
    )
}

/// The refill idle of `idle`'s GPU thread, over `syncs` synchronisations in
/// all; `None` when no refill could be measured.
pub fn measure(
    ds: &Dataset,
    idle: &ProcessIdle,
    calls: &[&Call],
    sampled: &SampledOps,
    syncs: i64,
) -> Option<SyncRefill> {
    let mut rows: Vec<&Call> = calls
        .iter()
        .copied()
        .filter(|c| c.tid == idle.gpu_thread && !c.nested)
        .collect();
    rows.sort_by_key(|c| c.ts_ns);
    let whole_until = whole_prefixes(ds, &rows, sampled);
    let bucket = ds.bucket_ns.max(1);
    let whole = |t: i64| {
        whole_until
            .get(&(t - t.rem_euclid(bucket)))
            .is_none_or(|&until| t <= until)
    };
    let (mut measured, mut total) = (0usize, 0.0f64);
    let mut prev_end: Option<i64> = None;
    for (i, c) in rows.iter().enumerate() {
        if ds.op_class(c.op_id) != OpClass::Sync {
            continue;
        }
        let end = c.ts_ns + c.dur_ns;
        let step_start = prev_end.replace(end);
        let Some(next) = rows[i + 1..]
            .iter()
            .find(|n| enqueues(ds.op_class(n.op_id)))
        else {
            continue;
        };
        let Some(start) = step_start else { continue };
        let to = next.ts_ns + next.dur_ns;
        if to <= end || !whole(start) || !whole(c.ts_ns) || !whole(next.ts_ns) {
            continue;
        }
        // The GPU time of the step the synchronisation waited for, and the
        // refill after it (the stream drained: idle throughout).
        let step_busy = ((end - start) as f64 - idle.loop_idle_in(start, end)).max(0.0);
        measured += 1;
        total += ((to - end) as f64).min(step_busy);
    }
    if measured == 0 {
        return None;
    }
    let per = total / measured as f64;
    Some(SyncRefill {
        measured,
        idle_per_sync_ns: per,
        idle_ns: (per * syncs.max(measured as i64) as f64).round() as i64,
    })
}

/// Per time bucket where some op dropped rows, the last instant up to which
/// the thread's row sequence is whole: the earliest last kept row among the
/// ops that dropped rows there.
fn whole_prefixes(ds: &Dataset, rows: &[&Call], sampled: &SampledOps) -> BTreeMap<i64, i64> {
    let bucket = ds.bucket_ns.max(1);
    let mut last_kept: BTreeMap<(i64, u16), i64> = BTreeMap::new();
    for c in rows.iter().filter(|c| sampled.sampled(c)) {
        let b = c.ts_ns - c.ts_ns.rem_euclid(bucket);
        let e = last_kept.entry((b, c.op_id)).or_insert(c.ts_ns);
        *e = (*e).max(c.ts_ns);
    }
    let mut out: BTreeMap<i64, i64> = BTreeMap::new();
    for ((b, _), t) in last_kept {
        let e = out.entry(b).or_insert(t);
        *e = (*e).min(t);
    }
    out
}
