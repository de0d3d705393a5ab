//! One host phase inside the loop: a single long stretch with no CUDA work
//! at all while the GPU thread stays on the CPU (a Python pre-processing
//! pass, an evaluation on the CPU, building the next dataset).
//!
//! Evidence that identifies it: the activity spans of the GPU process
//! (every CUDA call and the work it queued) leave one gap far longer than
//! any other, between the first and the last CUDA call, and the GPU
//! thread's switch records put it on the CPU for nearly all of it. What
//! it computed is not in those rows: the finding points at the stack
//! samples of that stretch.

use super::build::{chain, impact_points};
use super::context::Context;
use super::measured::busy_over;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use crate::intervals::{gaps, overlap, union};
use ingero_store::HostKind;

const FIX: &str = "See what the GPU thread computed in that stretch (get_stacks for its window, \
category on_cpu) before changing anything; work that need not block the GPU can run in another \
process or thread while the GPU keeps working, be done once ahead of the loop, or run on the GPU.";

/// A stretch at least this long counts.
const MIN_PHASE_NS: i64 = 1_000_000_000;

/// Detects one long on-CPU stretch of the main process's GPU thread with
/// no CUDA work.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let idle = ctx.main_idle()?;
    let tid = idle.gpu_thread;
    // A call of no measurable length still separates two gaps.
    let spans: Vec<(i64, i64)> = ds
        .activity
        .iter()
        .filter(|s| s.pid == main)
        .map(|s| (s.start_ns, s.end_ns.max(s.start_ns + 1)))
        .collect();
    let first = spans.iter().map(|s| s.0).min()?;
    let reach = spans.iter().map(|s| s.1).max()?;
    let mut empty = gaps(&union(spans, (first, reach)), (first, reach));
    let active = reach - first;
    empty.sort_by_key(|g| std::cmp::Reverse(g.1 - g.0));
    let (at, end) = *empty.first()?;
    let dur = end - at;
    let next = empty.get(1).map_or(0, |g| g.1 - g.0);
    if dur < MIN_PHASE_NS || next * 2 > dur || (dur as f64) < 0.1 * active as f64 {
        return None;
    }
    let off: i64 = ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.tid == tid && h.kind == HostKind::SchedSwitch && h.dur_ns > 0)
        .map(|h| overlap((h.ts_ns, h.ts_ns + h.dur_ns), (at, end)))
        .sum();
    let on_cpu = dur - off;
    if (on_cpu as f64) < 0.8 * dur as f64 {
        return None;
    }
    let busy = busy_over(ctx, main, (at, end));
    let offset = (at - ds.span.start_ns) as f64 / 1e9;
    // What the thread's Python samples of that stretch show, where taken.
    let frames = ds
        .py_profiles
        .get(&(main, tid))
        .map(|p| p.within(at, end))
        .filter(|p| p.active >= 20)
        .map(|p| p.describe());
    let what = frames.as_ref().map_or_else(
        || "what it computed is not in these rows".to_string(),
        |f| format!("its Python samples there: {f}"),
    );
    let summary = format!(
        "GPU thread {tid} of {main} on the CPU for {} of one {} stretch with no CUDA work at +{offset:.1}s (the next longest gap {}) <- one host phase inside the loop; {what}",
        format::ns(on_cpu),
        format::ns(dur),
        format::ns(next)
    );
    let root_cause = format!(
        "One host phase: between +{offset:.1}s and +{:.1}s {main} made no CUDA call and queued no GPU work while its GPU thread ran on the CPU ({} of the {}), {} of the time between its first and last CUDA call; {}",
        (end - ds.span.start_ns) as f64 / 1e9,
        format::ns(on_cpu),
        format::ns(dur),
        format::pct(dur as f64 / active.max(1) as f64),
        frames.as_ref().map_or_else(
            || "the stack samples of that window would say what it computed.".to_string(),
            |f| format!("its Python samples there: {f}."),
        )
    );
    let steps = vec![
        step(Layer::Gpu, busy.text()),
        step(
            Layer::Cuda,
            format!(
                "no CUDA call or queued work of {main} for {} (the next longest gap {})",
                format::ns(dur),
                format::ns(next)
            ),
        ),
        step(
            Layer::Host,
            format!(
                "GPU thread {tid}: on the CPU {} of it, off it {}",
                format::ns(on_cpu),
                format::ns(off)
            ),
        ),
    ];
    let evidence = vec![
        Evidence::new("phase_time", dur as f64, Unit::Ns, "activity spans"),
        Evidence::new(
            "host_compute",
            on_cpu as f64,
            Unit::Ns,
            "activity spans and switches",
        ),
        Evidence::new("next_longest_gap", next as f64, Unit::Ns, "activity spans"),
        Evidence::new("active_span", active as f64, Unit::Ns, "activity spans"),
    ];
    let score = 30.0 + impact_points(dur as f64 / active.max(1) as f64);
    Some(chain(
        ctx,
        Cause::HostCompute,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        vec![main],
        (at, end),
        FIX,
    ))
}
