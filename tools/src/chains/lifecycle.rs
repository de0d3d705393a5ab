//! Process lifecycle causes: a cold start that dominates the run, and bursts
//! of worker forks that stall the GPU thread.

use super::build::{chain, impact_points};
use super::context::Context;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::HostKind;

const FIX_COLD: &str = "Pay start-up once and keep it out of measurements: warm up (a few \
iterations before timing), keep the process alive between jobs (a persistent worker or server), enable \
lazy module loading (CUDA_MODULE_LOADING=LAZY) and cache compiled kernels (torch.compile cache, \
CUDA_CACHE_PATH on local disk).";

const FIX_FORKS: &str = "Start workers once and keep them: persistent_workers=True on the \
DataLoader, create the DataLoader iterator once per run rather than per epoch, and use the fork-server \
or spawn start method with a warm pool so worker start-up does not land in the training loop.";

/// Slowdown (over the op's median) at which an early call counts as cold.
const COLD_RATIO: f64 = 100.0;
/// Fork bursts are counted within this window, ns.
const FORK_WINDOW_NS: i64 = 2_000_000_000;

/// Detects a cold start: the first CUDA calls far slower than steady state.
pub fn detect_cold_start(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let calls: Vec<_> = ctx.main_calls().collect();
    let first_ts = calls.first()?.ts_ns;
    let last_ts = calls.last()?.ts_ns;
    let early_end = first_ts + ((last_ts - first_ts) / 10).max(1);
    let mut cold = Vec::new();
    for o in &ctx.main_ops {
        let Some(p50) = o.p50_ns else { continue };
        if o.raw_rows < 5 {
            continue;
        }
        for c in calls
            .iter()
            .filter(|c| ds.op_name(c.op_id) == o.op && c.ts_ns <= early_end)
        {
            if c.dur_ns as f64 >= COLD_RATIO * p50.max(1) as f64 && c.dur_ns >= 1_000_000 {
                cold.push((c.ts_ns, c.dur_ns, p50, o.op.clone()));
            }
        }
    }
    if cold.is_empty() {
        return None;
    }
    let excess: i64 = cold.iter().map(|c| c.1 - c.2).sum();
    let api: i64 = ctx
        .main_ops
        .iter()
        .map(|o| o.outer_ns())
        .sum::<i64>()
        .max(1);
    let ratio = cold
        .iter()
        .map(|c| c.1 as f64 / c.2.max(1) as f64)
        .fold(0.0, f64::max);
    let share = excess as f64 / api as f64;
    let evidence_pts = 20.0 * (ratio.log10() / 4.0).clamp(0.0, 1.0) + 30.0 * share.min(1.0) + 10.0;
    let score = evidence_pts + impact_points(excess as f64 / ctx.wall_ns() as f64);
    let mut ops: Vec<String> = cold.iter().map(|c| c.3.clone()).collect();
    ops.sort();
    ops.dedup();
    let summary = format!(
        "{} start-up calls ({}) up to {ratio:.0}x their steady-state median <- CUDA context creation and module loading",
        cold.len(),
        ops.join(", ")
    );
    let root_cause = format!(
        "Cold start: the first CUDA calls of {main} spend {} initialising the context and loading kernels, {} of all CUDA API time.",
        format::ns(excess),
        format::pct(share)
    );
    let steps = vec![
        step(
            Layer::Cuda,
            format!(
                "{} calls in the first 10% of the run take {} beyond their medians",
                cold.len(),
                format::ns(excess)
            ),
        ),
        step(
            Layer::Cuda,
            format!("worst: {ratio:.0}x the steady-state median"),
        ),
    ];
    let evidence = vec![
        Evidence::new("cold_calls", cold.len() as f64, Unit::Count, "raw rows"),
        Evidence::new("cold_excess_time", excess as f64, Unit::Ns, "raw rows"),
        Evidence::new(
            "cold_share_of_cuda_time",
            share * 100.0,
            Unit::Percent,
            "raw rows",
        ),
        Evidence::new("worst_ratio_to_median", ratio, Unit::Ratio, "raw rows"),
    ];
    let end = cold.iter().map(|c| c.0 + c.1).max().unwrap_or(first_ts);
    Some(chain(
        ctx,
        Cause::ColdStart,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ops,
        vec![main],
        (first_ts, end),
        FIX_COLD,
    ))
}

/// Detects a burst of forks from the GPU process tree that coincides with slow calls.
pub fn detect_fork_storm(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let forks: Vec<_> = ds
        .lifecycle
        .iter()
        .filter(|h| h.kind == HostKind::Fork && (h.pid == main || ds.descends_from(h.pid, main)))
        .collect();
    if forks.len() < 3 {
        return None;
    }
    // Densest burst within FORK_WINDOW_NS.
    let (mut best, mut best_i) = (0usize, 0usize);
    let mut j = 0;
    for i in 0..forks.len() {
        while forks[i].ts_ns - forks[j].ts_ns > FORK_WINDOW_NS {
            j += 1;
        }
        if i + 1 - j > best {
            best = i + 1 - j;
            best_i = j;
        }
    }
    if best < 3 {
        return None;
    }
    let burst = &forks[best_i..best_i + best];
    let start = burst[0].ts_ns;
    let end = burst[burst.len() - 1].ts_ns + FORK_WINDOW_NS;
    let slow = ctx.slow_calls();
    let hit: Vec<_> = slow
        .iter()
        .copied()
        .filter(|c| c.ts_ns >= start && c.ts_ns <= end)
        .collect();
    let excess = ctx.slow_excess_ns(&hit);
    let evidence_pts =
        10.0 + 10.0 * (best as f64 / 8.0).min(1.0) + if hit.is_empty() { 0.0 } else { 15.0 };
    let score = evidence_pts + impact_points(excess as f64 / ctx.wall_ns() as f64);
    let children: Vec<i32> = burst.iter().map(|h| h.arg as i32).collect();
    // "Worker" only where the children are DataLoader workers by the process tree.
    let workers = children
        .iter()
        .filter(|c| ctx.role(**c) == crate::processes::Role::DataloaderWorker)
        .count();
    let what = if workers * 2 >= children.len() && workers > 0 {
        "DataLoader worker start-up"
    } else {
        "process start-up"
    };
    let summary = format!(
        "{best} forks in {} <- {what}; {} slow CUDA calls in the following 2 s",
        format::ns(burst[burst.len() - 1].ts_ns - start),
        hit.len()
    );
    let root_cause = format!(
        "{}: the job forked {best} processes within {} (copying page tables, re-importing Python modules); {} CUDA calls of {main} slowed down right after.",
        what[..1].to_uppercase() + &what[1..],
        format::ns(burst[burst.len() - 1].ts_ns - start),
        hit.len()
    );
    let steps = vec![
        step(Layer::Host, format!("{best} forks: children {children:?}")),
        step(
            Layer::Cuda,
            format!(
                "{} calls >= 10x their median within 2 s after ({} lost)",
                hit.len(),
                format::ns(excess)
            ),
        ),
    ];
    let evidence = vec![
        Evidence::new("forks_in_burst", best as f64, Unit::Count, "raw rows"),
        Evidence::new(
            "slow_calls_after_burst",
            hit.len() as f64,
            Unit::Count,
            "raw rows",
        ),
        Evidence::new("excess_time", excess as f64, Unit::Ns, "raw rows"),
    ];
    let mut culprits = vec![main];
    culprits.extend(children);
    Some(chain(
        ctx,
        Cause::WorkerForkStorm,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ctx.op_names(hit.iter().copied()),
        culprits,
        (start, end),
        FIX_FORKS,
    ))
}
