//! One long block of the GPU thread: a single off-CPU stretch, far longer
//! than its others, while its loop runs (a checkpoint save, a lock, a
//! blocking read, a sleep).
//!
//! Evidence that identifies it: the GPU thread's own switch record of that
//! stretch (kept whatever the sampling), inside its active span. What it
//! waited for is not in the switch record: the finding says so, and says
//! that off-CPU stack samples would tell.

use super::build::chain;
use super::context::Context;
use super::measured::busy_over;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::HostKind;

const FIX: &str = "Find what the GPU thread waited for (the off-CPU stack of that moment: record \
with stack samples on, then get_stacks for the window) and move it off the training thread: save \
checkpoints from a background thread or process, read files ahead of time, avoid locks shared with \
slow threads.";

/// A stretch at least this long counts.
const MIN_BLOCK_NS: i64 = 1_000_000_000;

/// Detects the longest off-CPU stretch of the main process's GPU thread.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let idle = ctx.idle.iter().find(|p| p.pid == main)?;
    let tid = idle.gpu_thread;
    let ds = ctx.ds;
    let first = ctx.main_calls().map(|c| c.ts_ns).min()?;
    let last = ctx.main_calls().map(|c| c.ts_ns + c.dur_ns).max()?;
    let mut offs: Vec<(i64, i64, i64)> = ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.tid == tid && h.kind == HostKind::SchedSwitch && h.dur_ns > 0)
        .filter(|h| h.ts_ns >= first && h.ts_ns + h.dur_ns <= last)
        .map(|h| (h.ts_ns, h.dur_ns, h.arg))
        .collect();
    if offs.is_empty() {
        return None;
    }
    offs.sort_by_key(|o| std::cmp::Reverse(o.1));
    let (at, dur, arg) = offs[0];
    let next = offs.get(1).map_or(0, |o| o.1);
    // One block: long, and not one of many alike (a sleep in every step).
    if dur < MIN_BLOCK_NS || next * 2 > dur {
        return None;
    }
    let busy = busy_over(ctx, main, (at, at + dur));
    let how = match arg {
        1 => "preempted (still runnable)",
        0 => "blocked (waiting: I/O, a lock, a sleep or a child)",
        _ => "off-CPU, reason not recorded",
    };
    let offset = (at - ds.span.start_ns) as f64 / 1e9;
    let summary = format!(
        "GPU thread {tid} of {main} off-CPU for {} in one stretch at +{offset:.1}s ({how}), the next longest {} <- one long block of the loop; what it waited for is not in the capture",
        format::ns(dur),
        format::ns(next)
    );
    let root_cause = format!(
        "One long block: thread {tid} left the CPU for {} at +{offset:.1}s while its loop was running; during it, {}. The switch record does not say what it waited for (off-CPU stack samples would).",
        format::ns(dur),
        busy.text()
    );
    let steps = vec![
        step(
            Layer::Host,
            format!(
                "thread {tid} {how} for {} at +{offset:.1}s",
                format::ns(dur)
            ),
        ),
        step(Layer::Gpu, busy.text()),
    ];
    let evidence = vec![
        Evidence::new(
            "longest_block",
            dur as f64,
            Unit::Ns,
            "raw rows (sched_switch)",
        ),
        Evidence::new(
            "next_longest_block",
            next as f64,
            Unit::Ns,
            "raw rows (sched_switch)",
        ),
        Evidence::new(
            "block_offset",
            offset,
            Unit::Seconds,
            "raw rows (sched_switch)",
        ),
    ];
    let score = 50.0 + 30.0 * (dur as f64 / idle.span_ns.max(1) as f64 * 4.0).min(1.0);
    Some(chain(
        ctx,
        Cause::LongBlock,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        vec![main],
        (at, at + dur),
        FIX,
    ))
}
