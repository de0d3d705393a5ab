//! CPU contention: the GPU thread loses its core to other runnable work,
//! either the job's own DataLoader workers or unrelated processes.
//!
//! [`contenders`] finds who competes for the CPU and who is blamed,
//! [`saturated`] what the main process went through meanwhile (with
//! [`submission`] for its GPU thread's calls), [`text`] and [`evidence`] put
//! the finding into words and figures.

mod contenders;
mod evidence;
mod saturated;
mod submission;
mod text;

use super::build::{chain, impact_points};
use super::context::Context;
use crate::finding::Unit;
use crate::finding::{CausalChain, Evidence};
use contenders::{Blame, Contenders};
use ingero_store::HostKind;
use saturated::Saturated;

const FIX_WORKERS: &str = "Take per-sample work out of the input pipeline: for data already in memory, index \
pre-shuffled tensors directly (torch.randperm once per epoch, then slice batches) or use batched sampling \
(a BatchSampler so each fetch returns a whole batch); if workers stay, keep num_workers below the number of \
free cores and give the training process its own core (taskset or a cpuset).";

const FIX_EXTERNAL: &str = "Give the training process CPU time it does not have to fight for: move or \
throttle the competing processes (nice -n 19, a cgroup CPU quota), or reserve cores for the trainer \
(taskset/cpuset) so its launch thread is never queued behind them.";

/// Detects CPU contention around the main GPU process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let main = ctx.main?;
    let found = Contenders::find(ctx, main);
    let switches = found.helper_switches() + found.external_switches();
    let contender_rate = switches as f64 / ctx.ds.window_secs().max(1e-3);
    if !saturated(ctx, contender_rate) || switches == 0 {
        return None;
    }
    let s = Saturated::of(ctx, main);
    if s.harmless() {
        return None;
    }
    let score = score(ctx, &s, contender_rate);
    let blame = Blame::of(ctx, main, &found);
    let main_sw = ctx.ds.host_totals(HostKind::SchedSwitch, Some(main));
    let symptom = text::symptom(main, &s);
    let cpu = text::cpu(ctx);
    let steps = text::steps(ctx, main, &s, &blame, &main_sw, &cpu, &symptom);
    let mut evidence = evidence::list(ctx, &s, &blame, &main_sw);
    // The time this contention's own evidence covers: the GPU thread in the
    // run queue, and the calls slowed beyond their median while the CPU was
    // saturated.
    let slowed = ctx.slow_excess_ns(&s.slow_in_sat);
    // Blocked while the job's own workers ran counts when they are the blame.
    let preempted = ctx.main_idle().map_or(0, |i| {
        i.causes.off_cpu_preempted_ns
            + if blame.workers {
                i.causes.waiting_on_workers_ns
            } else {
                0
            }
    });
    evidence.push(Evidence::new(
        "slowed_call_time",
        slowed as f64,
        Unit::Ns,
        "raw rows: calls above their median while the CPU was saturated",
    ));
    let excess = excess_idle_while_saturated(ctx);
    if let Some(x) = excess {
        evidence.push(Evidence::new(
            "excess_idle_while_saturated",
            x as f64,
            Unit::Ns,
            "idle pieces: GPU idle while saturated beyond the unsaturated rate of the same loop",
        ));
    }
    evidence.push(Evidence::new(
        "contention_time",
        (preempted + slowed).max(excess.unwrap_or(0)) as f64,
        Unit::Ns,
        "idle split (preempted), raw rows (slowed calls), idle pieces (excess while saturated)",
    ));
    Some(chain(
        ctx,
        blame.cause,
        score,
        text::summary(&symptom, &cpu, &blame),
        text::root_cause(main, &s, &blame),
        steps,
        evidence,
        tailed_ops(ctx),
        blame.culprits(),
        s.span,
        if blame.workers {
            FIX_WORKERS
        } else {
            FIX_EXTERNAL
        },
    ))
}

/// GPU idle time of the main process while the CPU was saturated beyond
/// what the same loop idled at the same rate while it was not: the idle the
/// saturation added. `None` without at least a second of unsaturated loop
/// to compare with.
fn excess_idle_while_saturated(ctx: &Context) -> Option<i64> {
    let idle = ctx.main_idle()?;
    let (lo, hi) = (
        idle.loop_idle_pieces.first()?.0,
        idle.loop_idle_pieces.last()?.1,
    );
    let step = ctx.sample_interval_ns.max(1);
    let windows: Vec<(i64, i64)> = crate::intervals::union(
        ctx.sat.times.iter().map(|t| (t - step, *t)).collect(),
        (lo, hi),
    );
    let sat_len = crate::intervals::total(&windows);
    let rest_len = (hi - lo) - sat_len;
    if sat_len <= 0 || rest_len < 1_000_000_000 {
        return None;
    }
    let sat_idle: f64 = windows.iter().map(|w| idle.loop_idle_in(w.0, w.1)).sum();
    let rest_idle = idle.loop_idle_in(lo, hi) - sat_idle;
    let expected = rest_idle / rest_len as f64 * sat_len as f64;
    Some((sat_idle - expected).max(0.0).round() as i64)
}

/// True when the CPU was saturated: in at least a tenth of the samples, or,
/// without samples, when the contenders switched at least 200 times a second.
fn saturated(ctx: &Context, contender_rate: f64) -> bool {
    let sat = &ctx.sat;
    sat.share() >= 0.1 || (sat.samples == 0 && contender_rate >= 200.0)
}

/// The finding's score: evidence points for the saturation, the slowed tail
/// or idle GPU, the switch rate and the slow calls, plus impact points for
/// the time lost.
fn score(ctx: &Context, s: &Saturated, contender_rate: f64) -> f64 {
    let sat = &ctx.sat;
    let evidence_pts = 20.0 * sat.share()
        + if sat.peak_pct >= 99.0 { 5.0 } else { 0.0 }
        + 15.0
            * (s.ratio.max(1.0).log10() / 2.5)
                .min(1.0)
                .max(s.gpu_idle * 0.6)
        + 15.0 * (contender_rate / 1000.0).min(1.0)
        + 5.0 * s.slow_correlation();
    let off_ns = ctx.starvation.as_ref().map_or(0, |st| st.off_cpu_ns);
    // Lost time: the GPU thread off-CPU, slowed calls, and (when it barely
    // submitted work while the CPU was saturated) the idle stretch itself.
    let lost = (off_ns + ctx.slow_excess_ns(&s.slow_in_sat)) as f64;
    let idle_lost = s.gpu_idle * s.len_ns() as f64;
    let impact = lost.max(idle_lost) / ctx.wall_ns().max(s.len_ns()) as f64;
    evidence_pts + impact_points(impact)
}

/// The main process's ops with a heavy tail (p99 at least 5x p50).
fn tailed_ops(ctx: &Context) -> Vec<String> {
    ctx.symptoms
        .iter()
        .filter(|s| s.tail_ratio.unwrap_or(0.0) >= 5.0)
        .map(|s| s.op.clone())
        .collect()
}
