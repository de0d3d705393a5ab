//! The honest negative: when the host mostly waits on the GPU, the GPU is the
//! bottleneck and host tuning will not help. With NVML samples the claim is
//! checked against the GPU's own busy figure; without them it is an
//! inference from the waits and says so.

use super::build::chain;
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;

const FIX: &str = "The host keeps up; speed up the GPU work itself: profile kernels (Nsight \
Compute, torch.profiler), use mixed precision, fuse small kernels (torch.compile, CUDA graphs) and check \
that batch sizes fill the GPU.";

/// Measured SM busy share below which the waits are not kernel time, so the
/// run is not called GPU-bound.
pub const MEASURED_BUSY_MIN: f64 = 0.5;

/// Synchronisation share of the GPU thread's wall time, when the waits
/// dominate and the CPU has headroom.
fn waits(ctx: &Context) -> Option<(i32, f64, i64)> {
    let st = ctx.starvation.as_ref()?;
    let main = ctx.main?;
    // From the activity spans where the file has them: they hold every
    // call's time whatever the raw-row sampling kept.
    let from_spans: i64 = ctx
        .ds
        .activity
        .iter()
        .filter(|a| a.pid == main && a.tid == st.gpu_thread)
        .map(|a| a.parts[ingero_store::activity::CallPart::Sync.index()])
        .sum();
    let sync_ns = from_spans.max(st.sync_wait_ns).min(st.wall_ns);
    let sync_share = sync_ns as f64 / st.wall_ns.max(1) as f64;
    let cpu_ok = ctx.sat.samples == 0 || ctx.sat.share() < 0.1;
    (sync_share >= 0.5 && cpu_ok).then_some((main, sync_share, sync_ns))
}

/// The GPU's busy figure over the loop itself (first to last CUDA call of
/// the main process): start-up before it and the tail after it say nothing
/// about whether the loop is GPU-bound.
fn busy_of(ctx: &Context, main: i32) -> Option<BusyFigure> {
    let first = ctx.main_calls().map(|c| c.ts_ns).min()?;
    let last = ctx.main_calls().map(|c| c.ts_ns + c.dur_ns).max()?;
    if ctx.idle.iter().all(|p| p.pid != main) {
        return None;
    }
    Some(super::measured::busy_over(ctx, main, (first, last)))
}

/// Reports a GPU-bound run: synchronisation dominates while the CPU has
/// headroom, and (where NVML samples exist) the GPU is measured busy.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let (main, sync_share, sync_ns) = waits(ctx)?;
    let busy = busy_of(ctx, main);
    let measured = busy.as_ref().filter(|b| b.is_measured());
    if measured.is_some_and(|b| b.share() < MEASURED_BUSY_MIN) {
        return None;
    }
    // A busy share alone is not this job's GPU work: the host must have had
    // work queued over most of the busy time (the driver's own work, such as
    // zeroing fresh device memory, and other processes count as busy too).
    if let Some(idle) = ctx.main_idle().filter(|i| !i.busy_is_upper_bound) {
        if (idle.host_bound_busy_ns as f64) < 0.5 * idle.busy_ns as f64 {
            return None;
        }
    }
    let score = 10.0 + 20.0 * sync_share + measured.map_or(0.0, |b| 10.0 * b.share());
    let (summary, root_cause) = match measured {
        Some(b) => (
            format!(
                "GPU thread of {main} waits in synchronisation {} of its time with CPU headroom, GPU busy ({}) <- GPU-bound",
                format::pct(sync_share),
                b.text()
            ),
            format!(
                "Not host starvation: the GPU thread spends {} of its wall time waiting for the GPU to finish, the CPU is not saturated, and the GPU is busy: {}.",
                format::pct(sync_share),
                b.text()
            ),
        ),
        None => (
            format!(
                "GPU thread of {main} waits in synchronisation {} of its time with CPU headroom <- GPU-bound (inferred from the waits; no GPU samples)",
                format::pct(sync_share)
            ),
            format!(
                "Not host starvation as far as the host side shows: the GPU thread spends {} of its wall time waiting for the GPU to finish while the CPU is not saturated; no GPU samples say whether kernels fill that time{}.",
                format::pct(sync_share),
                busy.as_ref()
                    .map(|b| format!(" ({})", b.text()))
                    .unwrap_or_default()
            ),
        ),
    };
    let mut steps = vec![step(
        Layer::Cuda,
        format!("{} in synchronisation calls", format::ns(sync_ns)),
    )];
    let mut evidence = vec![Evidence::new(
        "sync_share_of_wall",
        sync_share * 100.0,
        Unit::Percent,
        "raw rows",
    )];
    if let Some(b) = &busy {
        steps.push(step(Layer::Gpu, b.text()));
        evidence.push(Evidence::new(
            "gpu_busy_share",
            b.share() * 100.0,
            Unit::Percent,
            b.source_label(),
        ));
    }
    Some(chain(
        ctx,
        Cause::GpuBound,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        vec![main],
        (ctx.ds.window.lo_ns, ctx.ds.window.hi_ns),
        FIX,
    ))
}

/// Why no GPU-bound chain was reported although the thread mostly waits in
/// synchronisation: NVML shows the GPU mostly idle meanwhile.
pub fn note(ctx: &Context) -> Option<String> {
    let (main, sync_share, _) = waits(ctx)?;
    let b = busy_of(ctx, main).filter(|b| b.is_measured())?;
    (b.share() < MEASURED_BUSY_MIN).then(|| {
        format!(
            "The GPU thread of {main} waits in synchronisation {} of its time, yet {}: the waits are not kernel time, so the run is not called GPU-bound (copies, other work on the GPU or device-side waits are not broken down by the samples).",
            format::pct(sync_share),
            b.text()
        )
    })
}
