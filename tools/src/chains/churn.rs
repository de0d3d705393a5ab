//! Allocator churn: device memory allocated and freed in the loop, step
//! after step (caching allocator off, `torch.cuda.empty_cache()` in the
//! loop, or a library that allocates per call).
//!
//! Evidence that identifies it: allocation and release calls of the main
//! process recur through the run (in most of its active seconds, at a
//! steady rate) and take a measurable part of its time. A few allocations
//! that are occasionally slow are another mechanism (`allocation_spike`).

use super::build::chain;
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::AggSource;
use ingero_store::OpClass;
use std::collections::BTreeSet;

const FIX: &str = "Keep device allocations out of the loop: reuse buffers (allocate once, write \
into them with out= arguments or in-place ops), keep PyTorch's caching allocator on (unset \
PYTORCH_NO_CUDA_MEMORY_CACHING) and do not call torch.cuda.empty_cache() in the loop; where shapes \
change every step, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True lets blocks be reused.";

/// Allocation classes.
fn is_alloc_free(class: OpClass) -> bool {
    matches!(
        class,
        OpClass::Alloc | OpClass::Free | OpClass::AllocAsync | OpClass::FreeAsync
    )
}

/// The main process's allocation/free totals: (calls, ns, bytes, seconds
/// with any, seconds with any CUDA call).
fn totals(ctx: &Context, main: i32) -> (i64, i64, i64, usize, usize) {
    let ds = ctx.ds;
    let (mut calls, mut ns, mut bytes) = (0, 0, 0);
    let mut alloc_buckets = BTreeSet::new();
    let mut active = BTreeSet::new();
    for a in ds
        .aggs
        .iter()
        .filter(|a| a.source == AggSource::Cuda && a.pid == main)
    {
        let Some(op) = u16::try_from(a.code).ok().and_then(|c| ds.ops.get(&c)) else {
            continue;
        };
        if a.outer_count() > 0 {
            active.insert(a.bucket_ns);
        }
        if is_alloc_free(op.class) && a.outer_count() > 0 {
            calls += a.outer_count();
            ns += a.outer_dur_ns();
            if matches!(op.class, OpClass::Alloc | OpClass::AllocAsync) {
                bytes += a.sum_bytes - a.nested_bytes;
            }
            alloc_buckets.insert(a.bucket_ns);
        }
    }
    (calls, ns, bytes, alloc_buckets.len(), active.len())
}

/// True when allocation and release recur through the main process's run.
pub fn present(ctx: &Context) -> bool {
    detect(ctx).is_some()
}

/// Detects device allocation and release in the loop of the main process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let idle = ctx.idle.iter().find(|p| p.pid == main)?;
    let (calls, ns, bytes, with_alloc, active) = totals(ctx, main);
    let active_s = (active as f64 * ctx.ds.bucket_ns as f64 / 1e9).max(1e-9);
    let rate = calls as f64 / active_s;
    let recurring = active >= 3 && with_alloc as f64 >= 0.8 * active as f64;
    let time_share = ns as f64 / idle.span_ns.max(1) as f64;
    if !recurring || rate < 20.0 || time_share < 0.05 {
        return None;
    }
    let busy = BusyFigure::of_idle(idle);
    let c = &idle.causes;
    let summary = format!(
        "{} device allocation/free calls ({:.0}/s) in {with_alloc} of {active} active seconds, {} inside them ({} of the {} lifetime) <- device memory allocated and freed in the loop",
        format::count(calls),
        rate,
        format::ns(ns),
        format::pct(time_share),
        format::ns(idle.span_ns)
    );
    let root_cause = format!(
        "Allocator churn: {main} allocates and frees device memory step after step ({} allocated in all); each call goes to the driver and the GPU thread spends {} inside them. {}",
        format::bytes(bytes),
        format::ns(ns),
        busy.text()
    );
    let mut steps = vec![
        step(
            Layer::Cuda,
            format!(
                "{} allocation/free calls, {:.0}/s, present in {with_alloc} of {active} seconds with CUDA calls",
                format::count(calls),
                rate
            ),
        ),
        step(
            Layer::Host,
            format!(
                "{} inside them ({} of the lifetime); {} of it while the GPU idled",
                format::ns(ns),
                format::pct(time_share),
                format::ns(c.in_alloc_free_ns)
            ),
        ),
        step(Layer::Gpu, busy.text()),
    ];
    if busy.is_measured() && busy.share() > 0.5 && time_share > 0.5 {
        steps.push(step(
            Layer::Gpu,
            "NVML counts any work on the device as SM busy, the driver's own work for fresh allocations included: the share of it that is this process's kernels is not measured".to_string(),
        ));
    }
    let evidence = vec![
        Evidence::new("alloc_free_calls", calls as f64, Unit::Count, "aggregates"),
        Evidence::new("alloc_free_per_s", rate, Unit::CountPerSec, "aggregates"),
        Evidence::new("alloc_free_time", ns as f64, Unit::Ns, "aggregates"),
        Evidence::new("allocated_bytes", bytes as f64, Unit::Bytes, "aggregates"),
        Evidence::new(
            "seconds_with_alloc",
            with_alloc as f64,
            Unit::Count,
            "aggregates",
        ),
        Evidence::new("active_seconds", active as f64, Unit::Count, "aggregates"),
        Evidence::new(
            "idle_inside_alloc_free",
            c.in_alloc_free_ns as f64,
            Unit::Ns,
            "activity spans",
        ),
    ];
    let score = 40.0 + 40.0 * (time_share * 2.0).min(1.0) + 20.0;
    let start = ctx.ds.window.lo_ns.max(ctx.ds.span.start_ns);
    let ops = ctx.op_names(ctx.main_calls().filter(|c| {
        ctx.ds
            .ops
            .get(&c.op_id)
            .is_some_and(|o| is_alloc_free(o.class))
    }));
    Some(chain(
        ctx,
        Cause::AllocatorChurn,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ops,
        vec![main],
        (start, start + idle.span_ns),
        FIX,
    ))
}
