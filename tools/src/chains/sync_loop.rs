//! Synchronisation in the loop: every step reads a few bytes back from the
//! GPU (`.item()`, `.cpu()`, printing a tensor), so the host waits for the
//! GPU to drain before it queues the next step, and the GPU then waits for
//! the host.
//!
//! Evidence that identifies it: device-to-host copies of a few bytes, about
//! one per synchronisation, through the run; the GPU idle while the thread
//! prepares and launches the next step.

use super::build::chain;
use super::context::Context;
use super::measured::BusyFigure;
use super::sync_refill;
use crate::dataset::SampledOps;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::catalog::copy_kind;
use ingero_store::OpClass;

const FIX: &str = "Keep values on the GPU inside the loop: accumulate losses and metrics in a \
tensor and read them (.item(), .cpu(), print) every N steps or at the end; replace data-dependent \
Python branches on GPU values with tensor ops (torch.where); with several of these per step, one \
non_blocking copy to pinned memory and a CUDA event replaces them.";

/// A copy back to the host this small is a scalar read, not data.
const SMALL_BYTES: i64 = 64;

/// Detects a per-step read-back of a scalar in the main process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let idle = ctx.idle.iter().find(|p| p.pid == main)?;
    let small: Vec<_> = ctx
        .main_calls()
        .filter(|c| {
            !c.nested
                && i64::from(c.copy_kind) == copy_kind::DEVICE_TO_HOST
                && c.bytes > 0
                && c.bytes <= SMALL_BYTES
                && ctx
                    .ds
                    .ops
                    .get(&c.op_id)
                    .is_some_and(|o| o.class == OpClass::Copy)
        })
        .collect();
    let syncs = idle.sync.syncs + idle.sync.sync_copies;
    // Every call, not only the kept rows: each row stands for the calls of
    // its op the aggregates counted.
    if small.is_empty() {
        return None;
    }
    let copy_ops: std::collections::BTreeSet<u16> = small.iter().map(|c| c.op_id).collect();
    // The read-back copies and the synchronisations are counted; the calls
    // that enqueue work are tracked too, for the refill's whole row runs.
    let sampled = SampledOps::of(ctx.ds, main, ctx.main_calls(), |op| {
        copy_ops.contains(&op)
            || matches!(
                ctx.ds.op_class(op),
                OpClass::Sync
                    | OpClass::Launch
                    | OpClass::GraphLaunch
                    | OpClass::Copy
                    | OpClass::Other
            )
    });
    let n = small.iter().map(|c| sampled.weight(c)).sum::<f64>().round() as i64;
    let source = if small.iter().any(|c| sampled.sampled(c)) {
        "raw rows scaled to the totals"
    } else {
        "raw rows"
    };
    if n < 100 || syncs <= 0 || idle.idle_share < 0.3 || idle.host_wait_ns <= 0 {
        return None;
    }
    let per_sync = n as f64 / syncs as f64;
    if per_sync < 0.5 {
        return None;
    }
    let c = &idle.causes;
    let feeding = c.in_launch_calls_ns + c.between_calls_ns + c.host_compute_ns + c.in_sync_ns;
    let share = feeding as f64 / idle.host_wait_ns as f64;
    if share < 0.25 {
        return None;
    }
    // What the synchronisations themselves cost: the idle inside them and
    // the refill after each (the finding's claim is capped there).
    let main_calls: Vec<_> = ctx.main_calls().collect();
    let refill = sync_refill::measure(ctx.ds, idle, &main_calls, &sampled, syncs);
    // A copy of a few bytes back to pageable memory blocks like a
    // synchronisation: the idle inside those copies is the wait too.
    let small_copy_ns: i64 = small
        .iter()
        .map(|c| c.dur_ns as f64 * sampled.weight(c))
        .sum::<f64>()
        .round() as i64;
    let own_idle =
        c.in_sync_ns + c.in_copies_ns.min(small_copy_ns) + refill.map_or(0, |r| r.idle_ns);
    let busy = BusyFigure::of_idle(idle);
    let span_s = idle.active_span_ns.max(1) as f64 / 1e9;
    let refill_text = match refill {
        Some(r) => format!(
            "after each synchronisation the GPU waits {} for the next work that overlap would have saved ({} measured), {} in all",
            format::ns(r.idle_per_sync_ns.round() as i64),
            format::count(r.measured as i64),
            format::ns(r.idle_ns)
        ),
        None => "the wait after each synchronisation could not be measured (no whole run of rows)".to_string(),
    };
    let summary = format!(
        "GPU idle {} of {} ({}) <- {} reads of at most {SMALL_BYTES} bytes back to the host ({:.0}/s, {:.2} per synchronisation) <- synchronisation in the loop: each step waits for the GPU, then the GPU waits for the next step ({refill_text})",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        busy.source_label(),
        format::count(n),
        n as f64 / span_s,
        per_sync,
    );
    let copy_names = ctx.op_names(small.iter().copied()).join(", ");
    let root_cause = format!(
        "Synchronisation in the loop: {main} reads a scalar back from the GPU {} times (device-to-host copies of at most {SMALL_BYTES} bytes through {copy_names}, e.g. .item() on a loss), {:.2} per synchronisation ({}), so the host cannot queue work ahead; {refill_text}, of {} GPU idle time while it prepared and launched steps. {}",
        format::count(n),
        per_sync,
        sync_calls(ctx, &sampled),
        format::ns(feeding),
        busy.text()
    );
    let steps = vec![
        step(
            Layer::Cuda,
            format!(
                "{} device-to-host copies of at most {SMALL_BYTES} bytes, {} synchronising calls",
                format::count(n),
                format::count(syncs)
            ),
        ),
        step(
            Layer::Host,
            format!(
                "while the GPU idled: launching {}, between calls {}, on-CPU {}, in synchronisations {}",
                format::ns(c.in_launch_calls_ns),
                format::ns(c.between_calls_ns),
                format::ns(c.host_compute_ns),
                format::ns(c.in_sync_ns)
            ),
        ),
        step(Layer::Gpu, busy.text()),
    ];
    let evidence = vec![
        Evidence::new("small_d2h_copies", n as f64, Unit::Count, source),
        Evidence::new("synchronisations", syncs as f64, Unit::Count, "totals"),
        Evidence::new("small_copies_per_sync", per_sync, Unit::Ratio, source),
        Evidence::new(
            "idle_feeding_next_step",
            feeding as f64,
            Unit::Ns,
            "activity spans",
        ),
        Evidence::new(
            "sync_refill_idle",
            own_idle as f64,
            Unit::Ns,
            "raw rows and activity spans",
        ),
    ];
    let start = ctx.ds.window.lo_ns.max(ctx.ds.span.start_ns);
    Some(chain(
        ctx,
        Cause::SyncInLoop,
        55.0 + 40.0 * share.min(1.0),
        summary,
        root_cause,
        steps,
        evidence,
        ctx.op_names(small.iter().copied()),
        vec![main],
        (start, start + idle.span_ns),
        FIX,
    ))
}

/// The main process's synchronising calls by op, most first, each with every
/// call counted: `cudaStreamSynchronize 49,656`.
fn sync_calls(ctx: &Context, sampled: &SampledOps) -> String {
    let mut ops: Vec<(u16, i64)> = sampled
        .ops()
        .filter(|&op| ctx.ds.op_class(op) == OpClass::Sync)
        .map(|op| (op, sampled.count(op)))
        .collect();
    ops.sort_by_key(|&(op, n)| (std::cmp::Reverse(n), op));
    if ops.is_empty() {
        return "synchronous copies".to_string();
    }
    ops.iter()
        .map(|&(op, n)| format!("{} {}", ctx.ds.op_name(op), format::count(n)))
        .collect::<Vec<_>>()
        .join(", ")
}
