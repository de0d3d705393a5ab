//! Counters the kernel keeps per CPU (loss counters, launch counts), read
//! as one total: each CPU increments its own slot without contention, and
//! user space sums them when it reads.

use aya::maps::{MapData, PerCpuArray};

/// Slot `slot` of a per-CPU counter array, summed over CPUs (0 when unreadable).
pub(crate) fn per_cpu_total(map: &PerCpuArray<MapData, u64>, slot: u32) -> u64 {
    map.get(&slot, 0)
        .map(|v| v.iter().copied().sum())
        .unwrap_or(0)
}
