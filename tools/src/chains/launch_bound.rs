//! Launch-bound loops: many tiny kernels, and the host's launch path, not
//! the GPU, sets the pace.
//!
//! Evidence that identifies it: a high launch rate of kernels that are
//! small by their recorded geometry (grid x block), the GPU measured (or
//! bounded) mostly idle, and that idle time spent by the GPU thread inside
//! launch calls and in the short host gaps between them.

use super::build::chain;
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;

const FIX: &str = "Launch fewer, larger kernels: capture the step once and replay it as a CUDA \
graph (torch.cuda.CUDAGraph, or torch.compile(mode=\"reduce-overhead\")), fuse the element-wise \
operations (torch.compile), or give each kernel more work (larger batches, vectorised ops instead \
of a Python loop over small tensors).";

/// Launches per second at or above which the launch path can set the pace.
const MIN_RATE: f64 = 2_000.0;

/// Mean GPU time per launch (measured busy / launches) under which the
/// kernels count as short.
const SHORT_KERNEL_NS: f64 = 50_000.0;

/// Detects a loop paced by kernel launches of the main process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let idle = ctx.main_idle()?;
    let l = &idle.launches;
    let c = &idle.causes;
    // Judge the loop: the idle before the first CUDA call (imports, set-up)
    // and after the last are not the launch path's.
    let loop_wait = idle.host_wait_ns - c.before_first_call_ns - c.after_last_call_ns;
    if l.launches < 1_000 || l.launches_per_s < MIN_RATE || loop_wait <= 0 {
        return None;
    }
    let launching = c.in_launch_calls_ns + c.between_calls_ns;
    let share = launching as f64 / loop_wait as f64;
    // Geometry, where read, must say the kernels are small.
    let small_share = l.small_launches as f64 / l.launches.max(1) as f64;
    let geometry_known = l.mean_threads_per_launch.is_some();
    // Or the measured GPU time says so: kernels that average under 50 us of
    // GPU time each are short beside the host's time to issue the next one,
    // whatever their grid (a wide element-wise kernel on a small tensor).
    let short_by_time = !idle.busy_is_upper_bound
        && (idle.busy_ns as f64 / l.launches.max(1) as f64) < SHORT_KERNEL_NS;
    if share < 0.25
        || idle.idle_share < 0.3
        || (geometry_known && small_share < 0.5 && !short_by_time)
    {
        return None;
    }
    let busy = BusyFigure::of_idle(idle);
    let geometry = if geometry_known {
        format!(
            ", {} of them small (at most 65,536 threads)",
            format::pct(small_share)
        )
    } else {
        ", geometry not recorded".to_string()
    };
    let summary = format!(
        "GPU idle {} of {} ({}) <- {} kernel launches at {:.0}/s{geometry} <- the launch path sets the pace: {} inside launch calls and {} between them while the GPU idled",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        busy.source_label(),
        format::count(l.launches),
        l.launches_per_s,
        format::ns(c.in_launch_calls_ns),
        format::ns(c.between_calls_ns)
    );
    let root_cause = format!(
        "Launch-bound loop: {main}'s GPU thread issues {} kernels ({:.0}/s, median {} inside each launch call{geometry}); each does little work, so the GPU waits for the next launch ({}). {} of the {} GPU idle time between the first and the last CUDA call passes inside launch calls or between them.",
        format::count(l.launches),
        l.launches_per_s,
        format::opt_ns(l.launch_p50_ns),
        busy.text(),
        format::ns(launching),
        format::ns(loop_wait)
    );
    let mut steps = vec![
        step(Layer::Gpu, busy.text()),
        step(
            Layer::Cuda,
            format!(
                "{} launches ({:.0}/s), {} per synchronisation, mean {} threads per launch",
                format::count(l.launches),
                l.launches_per_s,
                l.launches_per_sync
                    .map_or_else(|| "no synchronisation".to_string(), |v| format!("{v:.1}")),
                l.mean_threads_per_launch
                    .map_or_else(|| "unknown".to_string(), |v| format!("{v:.0}"))
            ),
        ),
        step(
            Layer::Host,
            format!(
                "while the GPU idled: inside launch calls {}, between calls {} ({} of the {} idle between the first and the last CUDA call)",
                format::ns(c.in_launch_calls_ns),
                format::ns(c.between_calls_ns),
                format::pct(share),
                format::ns(loop_wait)
            ),
        ),
    ];
    if l.graph_launches > 0 {
        steps.push(step(
            Layer::Cuda,
            format!(
                "{} graph launches already in use",
                format::count(l.graph_launches)
            ),
        ));
    }
    let evidence = vec![
        Evidence::new("launches", l.launches as f64, Unit::Count, "aggregates"),
        Evidence::new(
            "launches_per_s",
            l.launches_per_s,
            Unit::CountPerSec,
            "aggregates",
        ),
        Evidence::new(
            "small_launch_share",
            small_share * 100.0,
            Unit::Percent,
            "aggregates (launch geometry)",
        ),
        Evidence::new(
            "idle_inside_launch_calls",
            c.in_launch_calls_ns as f64,
            Unit::Ns,
            "activity spans",
        ),
        Evidence::new(
            "idle_between_calls",
            c.between_calls_ns as f64,
            Unit::Ns,
            "activity spans",
        ),
        Evidence::new(
            "gpu_idle_share",
            idle.idle_share * 100.0,
            Unit::Percent,
            busy.source_label(),
        ),
    ];
    let score = 40.0 + 40.0 * share.min(1.0) + if geometry_known { 20.0 } else { 0.0 };
    let start = ctx.ds.window.lo_ns.max(ctx.ds.span.start_ns);
    Some(chain(
        ctx,
        Cause::LaunchBound,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ctx.op_names(ctx.main_calls().filter(|c| {
            ctx.ds
                .ops
                .get(&c.op_id)
                .is_some_and(|o| o.class == ingero_store::OpClass::Launch)
        })),
        vec![main],
        (start, start + idle.span_ns),
        FIX,
    ))
}
