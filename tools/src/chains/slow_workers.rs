//! Too few or too slow DataLoader workers: the GPU thread blocks until its
//! workers deliver the next batch.
//!
//! Evidence that identifies it: the GPU thread's blocked time while worker
//! processes of its own were alive (the busy model's "waiting on DataLoader
//! workers" part) is a large share of the GPU idle time, and the CPU is not
//! saturated (a saturated CPU is contention, another finding).

use super::build::chain;
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;

const FIX: &str = "Feed the loop faster: raise num_workers (up to the free cores), make \
__getitem__ cheaper (decode or augment once ahead of time, vectorise per-sample Python), use \
persistent_workers=True and a larger prefetch_factor, and pin_memory=True for the copies.";

/// Detects a GPU thread waiting on its DataLoader workers.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let idle = ctx.idle.iter().find(|p| p.pid == main)?;
    let wait = idle.causes.waiting_on_workers_ns;
    if idle.host_wait_ns <= 0 {
        return None;
    }
    let share = wait as f64 / idle.host_wait_ns as f64;
    let saturated = ctx.sat.samples > 0 && ctx.sat.share() >= 0.5;
    let workers = ctx.dataloader_workers(main);
    if workers.is_empty() || share < 0.25 || saturated {
        return None;
    }
    let busy = BusyFigure::of_idle(idle);
    let summary = format!(
        "GPU idle {} of {} ({}) <- GPU thread {} blocked {} waiting for its {} DataLoader worker(s) with the CPU not saturated <- too few or too slow workers",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        busy.source_label(),
        idle.gpu_thread,
        format::ns(wait),
        workers.len()
    );
    let root_cause = format!(
        "The DataLoader workers of {main} ({}) do not deliver batches as fast as the GPU consumes them: its GPU thread waits {} for them ({} of the GPU idle time) while the CPU has room for more. {}",
        workers.iter().map(|w| w.to_string()).collect::<Vec<_>>().join(", "),
        format::ns(wait),
        format::pct(share),
        busy.text()
    );
    let steps = vec![
        step(
            Layer::Host,
            format!(
                "{} worker process(es) of {main}; CPU saturated in {} of {} system samples",
                workers.len(),
                ctx.sat.saturated,
                ctx.sat.samples
            ),
        ),
        step(
            Layer::Host,
            format!(
                "GPU thread {} blocked while its workers ran: {} of the {} GPU idle time",
                idle.gpu_thread,
                format::ns(wait),
                format::ns(idle.host_wait_ns)
            ),
        ),
        step(Layer::Gpu, busy.text()),
    ];
    let evidence = vec![
        Evidence::new(
            "waiting_on_workers",
            wait as f64,
            Unit::Ns,
            "activity spans and switches",
        ),
        Evidence::new(
            "share_of_idle",
            share * 100.0,
            Unit::Percent,
            "activity spans and switches",
        ),
        Evidence::new("workers", workers.len() as f64, Unit::Count, "process tree"),
        Evidence::new(
            "cpu_saturated_share",
            ctx.sat.share() * 100.0,
            Unit::Percent,
            "system snapshots",
        ),
    ];
    let start = ctx.ds.window.lo_ns.max(ctx.ds.span.start_ns);
    Some(chain(
        ctx,
        Cause::SlowWorkers,
        50.0 + 40.0 * share.min(1.0),
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        workers,
        (start, start + idle.span_ns),
        FIX,
    ))
}
