//! Allocation spikes: device allocations that periodically take far longer
//! than usual, the signature of a caching allocator missing and going to the
//! driver.

use super::build::{chain, impact_points};
use super::context::Context;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::OpClass;

const FIX: &str = "Stop allocating in the loop: keep tensor shapes stable so PyTorch's caching \
allocator reuses blocks, preallocate buffers once, avoid torch.cuda.empty_cache() in the loop, and set \
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to cut fragmentation-driven cudaMalloc calls.";

/// Slow allocations closer than this belong to one episode, ns.
const EPISODE_GAP_NS: i64 = 250_000_000;

/// Detects recurring slow device allocations in the main GPU process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let span = ds.window.duration_ns().max(1);
    let early = ds.window.lo_ns + span / 10;
    let mut slow = Vec::new();
    let mut ops = Vec::new();
    for o in ctx.main_ops.iter().filter(|o| o.class == OpClass::Alloc) {
        let Some(p50) = o.p50_ns else { continue };
        let calls: Vec<_> = ctx
            .main_calls()
            .filter(|c| ds.op_name(c.op_id) == o.op)
            .collect();
        let s: Vec<_> = calls
            .iter()
            .filter(|c| c.dur_ns >= 10 * p50.max(1) && c.dur_ns - p50 >= 100_000)
            .map(|c| (c.ts_ns, c.dur_ns, p50))
            .collect();
        if !s.is_empty() {
            ops.push(o.op.clone());
        }
        slow.extend(s);
    }
    slow.sort_by_key(|s| s.0);
    // Recurring through the run, not just at start-up (that is a cold start).
    let late: Vec<_> = slow.iter().filter(|s| s.0 >= early).collect();
    if late.len() < 3 {
        return None;
    }
    // Slow allocations come in episodes (one allocator miss triggers several
    // calls): group calls closer than EPISODE_GAP_NS and time the episodes.
    let mut episodes: Vec<(i64, i64)> = Vec::new();
    for s in &late {
        match episodes.last_mut() {
            Some(e) if s.0 - e.1 <= EPISODE_GAP_NS => e.1 = s.0 + s.1,
            _ => episodes.push((s.0, s.0 + s.1)),
        }
    }
    let gaps: Vec<f64> = episodes
        .windows(2)
        .map(|w| (w[1].0 - w[0].0) as f64)
        .collect();
    let mean_gap = if gaps.is_empty() {
        0.0
    } else {
        gaps.iter().sum::<f64>() / gaps.len() as f64
    };
    let sd = if gaps.is_empty() {
        0.0
    } else {
        (gaps.iter().map(|g| (g - mean_gap).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt()
    };
    let cv = if mean_gap > 0.0 { sd / mean_gap } else { 1.0 };
    // Synchronisations right after an episode stall on the allocation too.
    let sync_p50 = ctx
        .main_ops
        .iter()
        .filter(|o| o.class == OpClass::Sync)
        .filter_map(|o| o.p50_ns)
        .min()
        .unwrap_or(0);
    let stall: i64 = ctx
        .main_calls()
        .filter(|c| {
            ds.op_class(c.op_id) == OpClass::Sync
                && c.dur_ns >= 10 * sync_p50.max(1)
                && episodes
                    .iter()
                    .any(|e| c.ts_ns >= e.0 && c.ts_ns <= e.1 + EPISODE_GAP_NS)
        })
        .map(|c| c.dur_ns - sync_p50)
        .sum();
    let excess: i64 = late.iter().map(|s| s.1 - s.2).sum::<i64>() + stall;
    let alloc_time: i64 = ctx
        .main_ops
        .iter()
        .filter(|o| o.class == OpClass::Alloc)
        .map(|o| o.outer_ns())
        .sum();
    let api: i64 = ctx
        .main_ops
        .iter()
        .map(|o| o.outer_ns())
        .sum::<i64>()
        .max(1);
    let worst_ratio = late
        .iter()
        .map(|s| s.1 as f64 / s.2.max(1) as f64)
        .fold(0.0, f64::max);
    let periodic = episodes.len() >= 3 && cv < 0.5;
    let evidence_pts = 15.0 * (episodes.len() as f64 / 5.0).min(1.0)
        + if periodic { 15.0 } else { 5.0 }
        + 15.0 * (worst_ratio.log10() / 2.0).clamp(0.0, 1.0)
        + 15.0 * (alloc_time as f64 / api as f64).min(1.0);
    let score = evidence_pts + impact_points(excess as f64 / ctx.wall_ns() as f64);
    let period_text = if periodic {
        format!("every {:.1} s", mean_gap / 1e9)
    } else {
        "at irregular intervals".to_string()
    };
    let summary = format!(
        "{} slow device allocations ({}) in {} episodes {period_text}, up to {worst_ratio:.0}x their median, then sync stalls <- allocator cache misses",
        late.len(),
        ops.join(", "),
        episodes.len()
    );
    let root_cause = format!(
        "Device allocations in {main} recur {period_text} at up to {worst_ratio:.0}x their usual time: the caching allocator runs out of free blocks and calls the driver, stalling the loop ({} lost).",
        format::ns(excess)
    );
    let steps = vec![
        step(
            Layer::Cuda,
            format!(
                "{} allocations >= 10x median in {} episodes {period_text} (interval variation {:.0}%)",
                late.len(),
                episodes.len(),
                cv * 100.0
            ),
        ),
        step(
            Layer::Cuda,
            format!(
                "allocation calls take {} of CUDA API time",
                format::pct(alloc_time as f64 / api as f64)
            ),
        ),
    ];
    let evidence = vec![
        Evidence::new(
            "slow_allocations",
            late.len() as f64,
            Unit::Count,
            "raw rows",
        ),
        Evidence::new("episodes", episodes.len() as f64, Unit::Count, "raw rows"),
        Evidence::new(
            "sync_stall_after_episodes",
            stall as f64,
            Unit::Ns,
            "raw rows",
        ),
        Evidence::new("mean_interval", mean_gap, Unit::Ns, "raw rows"),
        Evidence::new("interval_variation", cv * 100.0, Unit::Percent, "raw rows"),
        Evidence::new(
            "worst_ratio_to_median",
            worst_ratio,
            Unit::Ratio,
            "raw rows",
        ),
        Evidence::new("excess_time", excess as f64, Unit::Ns, "raw rows"),
        Evidence::new(
            "alloc_share_of_cuda_time",
            alloc_time as f64 * 100.0 / api as f64,
            Unit::Percent,
            "raw rows",
        ),
    ];
    let first = late[0].0;
    let last = late[late.len() - 1].0 + late[late.len() - 1].1;
    Some(chain(
        ctx,
        Cause::AllocationSpike,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ops,
        vec![main],
        (first, last),
        FIX,
    ))
}
