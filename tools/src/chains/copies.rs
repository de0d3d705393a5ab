//! Pageable host memory: large host-device copies that run at a fraction of
//! pinned bandwidth and block the calling thread.

use super::context::Context;
use super::{chain, impact_points, step, CausalChain, Cause, Evidence};
use crate::format;
use ingero_store::OpClass;

/// Copies at least this large are judged by their bandwidth.
const BIG_COPY_BYTES: i64 = 1 << 20;
/// Effective bandwidth below which a big copy looks pageable, bytes/s.
const PAGEABLE_BELOW: f64 = 8e9;
/// Bandwidth a pinned copy reaches on current PCIe hosts, bytes/s.
const PINNED_EXPECTED: f64 = 20e9;

const FIX: &str = "Copy from pinned (page-locked) memory: pin_memory=True on the DataLoader or \
tensor.pin_memory() once for a reused staging buffer (cudaHostAlloc/cudaMallocHost in C++), then \
.to(device, non_blocking=True) so the copy runs at full PCIe bandwidth and overlaps compute.";

/// Detects slow copies from pageable memory in the main GPU process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let mut big: Vec<(i64, i64, i64)> = ctx
        .main_calls()
        .filter(|c| {
            ds.op_class(c.op_id) == OpClass::Copy
                && c.bytes >= BIG_COPY_BYTES
                && c.dur_ns > 0
                && (c.is_upload() || c.copy_kind == 2)
        })
        .map(|c| (c.ts_ns, c.bytes, c.dur_ns))
        .collect();
    if big.is_empty() {
        return None;
    }
    let mut bw: Vec<f64> = big
        .iter()
        .map(|(_, b, d)| *b as f64 * 1e9 / *d as f64)
        .collect();
    bw.sort_by(f64::total_cmp);
    let median_bw = bw[bw.len() / 2];
    if median_bw >= PAGEABLE_BELOW {
        return None;
    }
    let pinned_calls: i64 = ctx
        .main_ops
        .iter()
        .filter(|o| o.op == "cudaMallocHost" || o.op == "cudaHostAlloc")
        .map(|o| o.count)
        .sum();
    let bytes: i64 = big.iter().map(|c| c.1).sum();
    let time: i64 = big.iter().map(|c| c.2).sum();
    let api: i64 = ctx.main_ops.iter().map(|o| o.total_ns).sum::<i64>().max(1);
    let share = time as f64 / api as f64;
    let excess = (time as f64 - bytes as f64 / PINNED_EXPECTED * 1e9).max(0.0);
    let evidence_pts = 15.0 * ((PAGEABLE_BELOW - median_bw) / 6e9).clamp(0.0, 1.0)
        + if pinned_calls == 0 { 15.0 } else { 5.0 }
        + 20.0 * share.min(1.0)
        + 10.0 * (big.len() as f64 / 10.0).min(1.0);
    let score = evidence_pts + impact_points(excess / ctx.wall_ns() as f64);
    big.sort_by_key(|c| c.0);
    let ops: Vec<String> = {
        let mut v: Vec<String> = ctx
            .main_calls()
            .filter(|c| ds.op_class(c.op_id) == OpClass::Copy && c.bytes >= BIG_COPY_BYTES)
            .map(|c| ds.op_name(c.op_id).to_string())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let gbps = median_bw / 1e9;
    let summary = format!(
        "{} large copies ({}) at {gbps:.1} GB/s median <- pageable host memory{}",
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
    let steps = vec![
        step(
            "HOST",
            format!(
                "{} calls to cudaMallocHost/cudaHostAlloc in {main}",
                format::count(pinned_calls)
            ),
        ),
        step(
            "CUDA",
            format!(
                "{} copies >= 1 MiB: {} in {}, median {gbps:.1} GB/s ({} of CUDA API time)",
                big.len(),
                format::bytes(bytes),
                format::ns(time),
                format::pct(share)
            ),
        ),
    ];
    let evidence = vec![
        Evidence::new("large_copies", big.len() as f64, "count", "raw rows"),
        Evidence::new("large_copy_bytes", bytes as f64, "bytes", "raw rows"),
        Evidence::new("large_copy_time", time as f64, "ns", "raw rows"),
        Evidence::new("median_copy_bandwidth", median_bw, "bytes/s", "raw rows"),
        Evidence::new(
            "copy_share_of_cuda_time",
            share * 100.0,
            "percent",
            "raw rows",
        ),
        Evidence::new(
            "pinned_alloc_calls",
            pinned_calls as f64,
            "count",
            "raw rows",
        ),
        Evidence::new("excess_over_pinned", excess, "ns", "raw rows"),
    ];
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
