//! Pageable host memory: large host-device copies that run at a fraction of
//! pinned bandwidth and block the calling thread.

use super::build::{chain, impact_points};
use super::context::Context;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::OpClass;

/// Copies at least this large are judged by their bandwidth.
const BIG_COPY_BYTES: i64 = 1 << 20;
/// Effective bandwidth below which a big synchronous copy looks pageable, bytes/s.
const PAGEABLE_BELOW: f64 = 8e9;
/// An asynchronous copy that kept the caller below this rate blocked for the
/// transfer instead of returning at once, bytes/s.
const ASYNC_BLOCKED_BELOW: f64 = 20e9;
/// Bandwidth a pinned copy reaches on current PCIe hosts, bytes/s.
const PINNED_EXPECTED: f64 = 20e9;

const FIX: &str = "Copy from pinned (page-locked) memory: pin_memory=True on the DataLoader or \
tensor.pin_memory() once for a reused staging buffer (cudaHostAlloc/cudaMallocHost in C++), then \
.to(device, non_blocking=True) so the copy runs at full PCIe bandwidth and overlaps compute.";

/// Detects slow copies from pageable memory in the main GPU process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    // Outermost calls only: a driver copy inside a runtime copy is the same transfer.
    // (start, bytes, duration, asynchronous API)
    let all_big: Vec<(i64, i64, i64, bool)> = ctx
        .main_calls()
        .filter(|c| {
            ds.op_class(c.op_id) == OpClass::Copy
                && !c.nested
                && c.bytes >= BIG_COPY_BYTES
                && c.dur_ns > 0
                && (c.is_upload() || c.copy_kind == 2)
        })
        .map(|c| {
            (
                c.ts_ns,
                c.bytes,
                c.dur_ns,
                ds.op_name(c.op_id).contains("Async"),
            )
        })
        .collect();
    let bw_of = |c: &(i64, i64, i64, bool)| c.1 as f64 * 1e9 / c.2 as f64;
    // An asynchronous copy from pinned memory returns at once; one that blocks
    // for the transfer was staged through pageable memory. A synchronous copy
    // always blocks, so only its bandwidth can tell.
    let is_slow = |c: &(i64, i64, i64, bool)| {
        bw_of(c)
            < if c.3 {
                ASYNC_BLOCKED_BELOW
            } else {
                PAGEABLE_BELOW
            }
    };
    let mut big: Vec<(i64, i64, i64, bool)> =
        all_big.iter().copied().filter(|c| is_slow(c)).collect();
    let mut at_once: Vec<i64> = all_big
        .iter()
        .filter(|c| c.3 && !is_slow(c))
        .map(|c| c.2)
        .collect();
    at_once.sort_unstable();
    let at_once_median = at_once.get(at_once.len() / 2).copied();
    // Three slow copies make a pattern; fewer only when every large copy was slow.
    let all_slow = !big.is_empty() && big.len() == all_big.len();
    if big.len() < 3 && !all_slow {
        return None;
    }
    let mut bw: Vec<f64> = big.iter().map(bw_of).collect();
    bw.sort_by(f64::total_cmp);
    let median_bw = bw[bw.len() / 2];
    let pinned_calls: i64 = ctx
        .main_ops
        .iter()
        .filter(|o| o.op == "cudaMallocHost" || o.op == "cudaHostAlloc")
        .map(|o| o.count)
        .sum();
    let bytes: i64 = big.iter().map(|c| c.1).sum();
    let time: i64 = big.iter().map(|c| c.2).sum();
    let api: i64 = ctx
        .main_ops
        .iter()
        .map(|o| o.outer_ns())
        .sum::<i64>()
        .max(1);
    let share = time as f64 / api as f64;
    let excess = (time as f64 - bytes as f64 / PINNED_EXPECTED * 1e9).max(0.0);
    let evidence_pts = 15.0 * ((ASYNC_BLOCKED_BELOW - median_bw) / 15e9).clamp(0.0, 1.0)
        + if pinned_calls == 0 { 15.0 } else { 5.0 }
        + 20.0 * share.min(1.0)
        + 10.0 * (big.len() as f64 / 10.0).min(1.0);
    let score = evidence_pts + impact_points(excess / ctx.wall_ns() as f64);
    big.sort_by_key(|c| c.0);
    let ops = ctx.op_names(ctx.main_calls().filter(|c| {
        ds.op_class(c.op_id) == OpClass::Copy && !c.nested && c.bytes >= BIG_COPY_BYTES
    }));
    let gbps = median_bw / 1e9;
    let contrast = at_once_median
        .map(|m| {
            format!(
                "; {} other large asynchronous copies returned at once (median {}): pinned source",
                at_once.len(),
                format::ns(m)
            )
        })
        .unwrap_or_default();
    let summary = format!(
        "{} large copies ({}) at {gbps:.1} GB/s median <- pageable host memory{}{contrast}",
        big.len(),
        format::bytes(bytes),
        if pinned_calls == 0 {
            " (no pinned allocations seen)"
        } else {
            ""
        }
    );
    let root_cause = format!(
        "Host-device copies in {main} move {} at {gbps:.1} GB/s, far below pinned-memory bandwidth: the driver stages pageable memory through a bounce buffer and the calling thread blocks for the whole copy ({} spent, about {} more than pinned copies would take).",
        format::bytes(bytes),
        format::ns(time),
        format::ns(excess as i64)
    );
    let mut steps = vec![
        step(
            Layer::Host,
            format!(
                "{} calls to cudaMallocHost/cudaHostAlloc in {main}",
                format::count(pinned_calls)
            ),
        ),
        step(
            Layer::Cuda,
            format!(
                "{} copies >= 1 MiB: {} in {}, median {gbps:.1} GB/s ({} of CUDA API time)",
                big.len(),
                format::bytes(bytes),
                format::ns(time),
                format::pct(share)
            ),
        ),
    ];
    if let Some(m) = at_once_median {
        steps.push(step(
            Layer::Cuda,
            format!(
                "{} other large asynchronous copies in the same process returned at once (median {}): pinned source, transfer overlapped",
                at_once.len(),
                format::ns(m)
            ),
        ));
    }
    let mut evidence = vec![
        Evidence::new("large_copies", big.len() as f64, Unit::Count, "raw rows"),
        Evidence::new("large_copy_bytes", bytes as f64, Unit::Bytes, "raw rows"),
        Evidence::new("large_copy_time", time as f64, Unit::Ns, "raw rows"),
        Evidence::new(
            "median_copy_bandwidth",
            median_bw,
            Unit::BytesPerSec,
            "raw rows",
        ),
        Evidence::new(
            "copy_share_of_cuda_time",
            share * 100.0,
            Unit::Percent,
            "raw rows",
        ),
        Evidence::new(
            "pinned_alloc_calls",
            pinned_calls as f64,
            Unit::Count,
            "raw rows",
        ),
        Evidence::new("excess_over_pinned", excess, Unit::Ns, "raw rows"),
    ];
    if let Some(m) = at_once_median {
        evidence.push(Evidence::new(
            "async_copies_returned_at_once",
            at_once.len() as f64,
            Unit::Count,
            "raw rows",
        ));
        evidence.push(Evidence::new(
            "async_copy_at_once_median",
            m as f64,
            Unit::Ns,
            "raw rows",
        ));
    }
    let span = (big[0].0, big[big.len() - 1].0 + big[big.len() - 1].2);
    Some(chain(
        ctx,
        Cause::PageableMemcpy,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ops,
        vec![main],
        span,
        FIX,
    ))
}
