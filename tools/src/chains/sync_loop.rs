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
use crate::finding::{step, CausalChain, Cause, Evidence};
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
    let n = small.len() as i64;
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
    let busy = BusyFigure::of_idle(idle);
    let span_s = idle.active_span_ns.max(1) as f64 / 1e9;
    let summary = format!(
        "GPU idle {} of {} ({}) <- {} reads of at most {SMALL_BYTES} bytes back to the host ({:.0}/s, {:.2} per synchronisation) <- synchronisation in the loop: each step waits for the GPU, then the GPU waits for the next step ({} of its idle time)",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        busy.source_label(),
        format::count(n),
        n as f64 / span_s,
        per_sync,
        format::ns(feeding)
    );
    let root_cause = format!(
        "Synchronisation in the loop: {main} copies a scalar back from the GPU {} times ({:.2} per synchronisation, e.g. .item() on a loss), so the host cannot queue work ahead; while it prepares and launches the next step the GPU has nothing to do: {} of the {} GPU idle time. {}",
        format::count(n),
        per_sync,
        format::ns(feeding),
        format::ns(idle.host_wait_ns),
        busy.text()
    );
    let steps = vec![
        step(
            "CUDA",
            format!(
                "{} device-to-host copies of at most {SMALL_BYTES} bytes, {} synchronising calls",
                format::count(n),
                format::count(syncs)
            ),
        ),
        step(
            "HOST",
            format!(
                "while the GPU idled: launching {}, between calls {}, on-CPU {}, in synchronisations {}",
                format::ns(c.in_launch_calls_ns),
                format::ns(c.between_calls_ns),
                format::ns(c.host_compute_ns),
                format::ns(c.in_sync_ns)
            ),
        ),
        step("GPU", busy.text()),
    ];
    let evidence = vec![
        Evidence::new("small_d2h_copies", n as f64, "count", "raw rows"),
        Evidence::new("synchronisations", syncs as f64, "count", "raw rows"),
        Evidence::new("small_copies_per_sync", per_sync, "ratio", "raw rows"),
        Evidence::new(
            "idle_feeding_next_step",
            feeding as f64,
            "ns",
            "activity spans",
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
