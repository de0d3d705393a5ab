//! Memory causes: kernel page-allocation storms in the job, and host memory
//! pressure.

use super::build::{chain, impact_points};
use super::context::Context;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use ingero_store::{AggSource, HostKind};
use std::collections::BTreeMap;

/// Peak page-allocation rate (bytes/s) from which a storm is reported.
const STORM_RATE: f64 = 256.0 * 1024.0 * 1024.0;

const FIX_PAGES: &str = "Stop building fresh host buffers per batch: collate into a preallocated, \
reused (ideally pinned) batch buffer, avoid per-sample torch.stack/np.concatenate, and use a pooling \
allocator (jemalloc or tcmalloc via LD_PRELOAD) or transparent huge pages so the kernel is not asked for \
millions of fresh pages.";

const FIX_PRESSURE: &str = "Give the host headroom: lower DataLoader prefetch_factor and num_workers \
(each worker holds its own copies), share read-only data between workers (memory-mapped arrays instead \
of Python objects), and stop other memory-heavy processes on the node.";

/// Detects bursts of page allocations in the GPU job's process tree.
pub fn detect_page_storm(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let in_job = |pid: i32| pid == main || ds.descends_from(pid, main);
    let mut per_bucket: BTreeMap<i64, i64> = BTreeMap::new();
    let mut per_pid: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    for a in ds.aggs.iter().filter(|a| {
        a.source == AggSource::Host && a.code == HostKind::PageAlloc.id() as i64 && in_job(a.pid)
    }) {
        *per_bucket.entry(a.bucket_ns).or_default() += a.sum_bytes;
        let e = per_pid.entry(a.pid).or_default();
        e.0 += a.count;
        e.1 += a.sum_bytes;
    }
    let width_s = ds.bucket_ns as f64 / 1e9;
    let (&peak_bucket, &peak_bytes) = per_bucket.iter().max_by_key(|(_, b)| **b)?;
    let peak_rate = peak_bytes as f64 / width_s;
    if peak_rate < STORM_RATE {
        return None;
    }
    let storm: Vec<i64> = per_bucket
        .iter()
        .filter(|(_, b)| **b as f64 >= 0.5 * peak_bytes as f64)
        .map(|(t, _)| *t)
        .collect();
    let slow = ctx.slow_calls();
    let hit: Vec<_> = slow
        .iter()
        .copied()
        .filter(|c| {
            storm
                .iter()
                .any(|b| c.ts_ns >= *b && c.ts_ns < *b + ds.bucket_ns)
        })
        .collect();
    let corr = if slow.is_empty() {
        0.0
    } else {
        hit.len() as f64 / slow.len() as f64
    };
    let total_pages: i64 = per_pid.values().map(|v| v.0).sum();
    let total_bytes: i64 = per_pid.values().map(|v| v.1).sum();
    // The processes named are those allocating inside the storm's buckets,
    // with what they allocated there: a process that appears later in the
    // window is no culprit of this storm.
    let mut in_storm: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    for a in ds.aggs.iter().filter(|a| {
        a.source == AggSource::Host
            && a.code == HostKind::PageAlloc.id() as i64
            && in_job(a.pid)
            && storm.binary_search(&a.bucket_ns).is_ok()
    }) {
        let e = in_storm.entry(a.pid).or_default();
        e.0 += a.count;
        e.1 += a.sum_bytes;
    }
    let mut top: Vec<(i32, i64, i64)> = in_storm.iter().map(|(p, v)| (*p, v.0, v.1)).collect();
    top.sort_by_key(|t| std::cmp::Reverse(t.2));
    let evidence_pts = 15.0 * (peak_rate / (2.0 * 1024.0 * 1024.0 * 1024.0)).min(1.0)
        + 10.0 * corr
        + 5.0 * (total_pages as f64 / 1e6).min(1.0);
    let excess = ctx.slow_excess_ns(&hit);
    let score = evidence_pts + impact_points(excess as f64 / ctx.wall_ns() as f64);
    let top_text: Vec<String> = top
        .iter()
        .take(3)
        .map(|t| format!("{} {} ({})", ds.comm(t.0), t.0, format::count(t.1)))
        .collect();
    let summary = format!(
        "{} slow CUDA calls in page-allocation bursts <- {}/s of fresh pages at peak (in the bursts: {})",
        hit.len(),
        format::bytes(peak_rate as i64),
        top_text.join(", ")
    );
    let root_cause = format!(
        "Page-allocation storm: the job made {} page allocations ({} of fresh memory in all, an allocation being one or several pages), peaking at {}/s; page faults and zeroing steal CPU from the GPU thread.",
        format::count(total_pages),
        format::bytes(total_bytes),
        format::bytes(peak_rate as i64)
    );
    let steps = vec![
        step(
            Layer::Host,
            format!(
                "{} page allocations, peak {}/s, top: {}",
                format::count(total_pages),
                format::bytes(peak_rate as i64),
                top_text.join(", ")
            ),
        ),
        step(
            Layer::Cuda,
            format!(
                "{} of {} slow calls fall in the storm buckets",
                hit.len(),
                slow.len()
            ),
        ),
    ];
    let evidence = vec![
        Evidence::new("page_allocs", total_pages as f64, Unit::Count, "aggregates"),
        Evidence::new(
            "page_alloc_bytes",
            total_bytes as f64,
            Unit::Bytes,
            "aggregates",
        ),
        Evidence::new(
            "peak_page_alloc_rate",
            peak_rate,
            Unit::BytesPerSec,
            "aggregates",
        ),
        Evidence::new(
            "slow_calls_in_storm",
            hit.len() as f64,
            Unit::Count,
            "raw rows",
        ),
    ];
    Some(chain(
        ctx,
        Cause::PageAllocStorm,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        ctx.op_names(hit.iter().copied()),
        top.iter().take(5).map(|t| t.0).collect(),
        (
            storm.first().copied().unwrap_or(peak_bucket),
            storm.last().copied().unwrap_or(peak_bucket) + ds.bucket_ns,
        ),
        FIX_PAGES,
    ))
}

/// Detects host memory pressure from the system samples.
pub fn detect_pressure(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let snaps = &ds.snapshots;
    if snaps.is_empty() {
        return None;
    }
    let high: Vec<_> = snaps.iter().filter(|s| s.mem_used_pct >= 90.0).collect();
    let swap_min = snaps.iter().map(|s| s.swap_used_mb).min().unwrap_or(0);
    let swap_max = snaps.iter().map(|s| s.swap_used_mb).max().unwrap_or(0);
    let swap_growth = swap_max - swap_min;
    if high.len() < 3 && swap_growth < 64 {
        return None;
    }
    let peak = snaps.iter().map(|s| s.mem_used_pct).fold(0.0, f64::max);
    let min_avail = snaps.iter().map(|s| s.mem_avail_mb).min().unwrap_or(0);
    let frac = high.len() as f64 / snaps.len() as f64;
    let score = 10.0 + 20.0 * frac + if swap_growth >= 64 { 15.0 } else { 0.0 };
    let summary = format!(
        "memory >= 90% in {} of {} samples (peak {peak:.0}%), swap grew {} MiB",
        high.len(),
        snaps.len(),
        swap_growth
    );
    let root_cause = format!(
        "Host memory pressure: memory use peaked at {peak:.0}% with {min_avail} MiB available and swap grew by {swap_growth} MiB; reclaim and swapping stall every thread, the GPU thread included."
    );
    let steps = vec![step(
        Layer::System,
        format!(
            "memory >= 90% in {} samples, min available {min_avail} MiB, swap +{swap_growth} MiB",
            high.len()
        ),
    )];
    let evidence = vec![
        Evidence::new(
            "high_memory_samples",
            high.len() as f64,
            Unit::Count,
            "system snapshots",
        ),
        Evidence::new("memory_peak", peak, Unit::Percent, "system snapshots"),
        Evidence::new(
            "min_available",
            min_avail as f64 * 1048576.0,
            Unit::Bytes,
            "system snapshots",
        ),
        Evidence::new(
            "swap_growth",
            swap_growth as f64 * 1048576.0,
            Unit::Bytes,
            "system snapshots",
        ),
    ];
    let span = match (high.first(), high.last()) {
        (Some(a), Some(b)) => (a.ts_ns, b.ts_ns),
        _ => (ds.window.lo_ns, ds.window.hi_ns),
    };
    Some(chain(
        ctx,
        Cause::MemoryPressure,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        Vec::new(),
        span,
        FIX_PRESSURE,
    ))
}
