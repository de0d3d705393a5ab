//! What the loop does per step, from exact counts: launches, syncs, copies
//! and their bytes, device and pinned allocations, processes started and
//! fresh host pages, each divided by the steps the loop's period gives.
//!
//! Counts and ratios generalise beyond any one API: a loop that starts a
//! process, allocates pinned memory or synchronises several times in every
//! step does so whatever library made the call, and the ratio says so
//! before any mechanism is named.

use crate::dataset::Dataset;
use ingero_store::{AggSource, HostKind, OpClass};
use serde::Serialize;

/// The loop's work per step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PerStep {
    /// Steps in the loop: its length over the step period.
    pub steps: f64,
    /// The step period, ns: the median time between outer synchronisations
    /// (one step where the loop syncs once per step; otherwise "step" reads
    /// as "interval between synchronisations").
    pub period_ns: i64,
    /// Kernel and graph launches per step.
    pub launches: f64,
    /// Synchronisations per step.
    pub syncs: f64,
    /// Copies per step.
    pub copies: f64,
    /// Bytes copied per step.
    pub copy_bytes: f64,
    /// Blocking device or pinned allocations and frees per step.
    pub allocs_frees: f64,
    /// Pinned host allocations per step (`cudaHostAlloc` and kin).
    pub pinned_allocs: f64,
    /// Processes the job started per step (forks of the process or its
    /// descendants).
    pub processes_started: f64,
    /// Fresh host memory the GPU process was given per step, bytes.
    pub page_bytes: f64,
}

/// Pinned host allocation functions.
const PINNED: &[&str] = &["HostAlloc", "MallocHost", "MemAllocHost", "HostRegister"];

/// The per-step figures of `pid` over its loop `[first, last]`, `None`
/// without a step period or with fewer than three steps.
pub fn of(
    ds: &Dataset,
    pid: i32,
    loop_span: (i64, i64),
    period_ns: Option<i64>,
) -> Option<PerStep> {
    let period = period_ns.filter(|p| *p > 0)?;
    let steps = (loop_span.1 - loop_span.0) as f64 / period as f64;
    if steps < 3.0 {
        return None;
    }
    let in_loop = |bucket: i64| bucket + ds.bucket_ns > loop_span.0 && bucket <= loop_span.1;
    let mut p = PerStep {
        steps,
        period_ns: period,
        ..PerStep::default()
    };
    for a in ds
        .aggs
        .iter()
        .filter(|a| a.pid == pid && a.source == AggSource::Cuda && in_loop(a.bucket_ns))
    {
        let Ok(id) = u16::try_from(a.code) else {
            continue;
        };
        let n = a.outer_count() as f64;
        match ds.op_class(id) {
            OpClass::Launch | OpClass::GraphLaunch => p.launches += n,
            OpClass::Sync => p.syncs += n,
            OpClass::Copy => {
                p.copies += n;
                p.copy_bytes += (a.sum_bytes - a.nested_bytes).max(0) as f64;
            }
            OpClass::Alloc | OpClass::Free => {
                p.allocs_frees += n;
                let name = ds.ops.get(&id).map_or("", |o| o.name.as_str());
                if PINNED.iter().any(|k| name.contains(k)) {
                    p.pinned_allocs += n;
                }
            }
            _ => {}
        }
    }
    p.processes_started = ds
        .lifecycle
        .iter()
        .filter(|h| {
            h.kind == HostKind::Fork
                && h.ts_ns >= loop_span.0
                && h.ts_ns <= loop_span.1
                && (h.pid == pid || ds.descends_from(h.pid, pid))
        })
        .count() as f64;
    p.page_bytes = ds
        .aggs
        .iter()
        .filter(|a| {
            a.pid == pid
                && a.source == AggSource::Host
                && a.code == HostKind::PageAlloc.id() as i64
                && in_loop(a.bucket_ns)
        })
        .map(|a| a.sum_bytes as f64)
        .sum();
    for v in [
        &mut p.launches,
        &mut p.syncs,
        &mut p.copies,
        &mut p.copy_bytes,
        &mut p.allocs_frees,
        &mut p.pinned_allocs,
        &mut p.processes_started,
        &mut p.page_bytes,
    ] {
        *v = (*v / steps * 100.0).round() / 100.0;
    }
    p.steps = (steps * 10.0).round() / 10.0;
    Some(p)
}

impl PerStep {
    /// The figures that stand out, in words (`1.0 processes started`, `3.0
    /// syncs`), for findings: per step, what the loop does beyond launching
    /// kernels and one synchronisation.
    pub fn notable(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.processes_started >= 0.5 {
            v.push(format!("{:.1} processes started", self.processes_started));
        }
        if self.pinned_allocs >= 0.5 {
            v.push(format!("{:.1} pinned host allocations", self.pinned_allocs));
        }
        if self.allocs_frees >= 1.0 {
            v.push(format!("{:.1} device allocations/frees", self.allocs_frees));
        }
        if self.copies >= 1.0 {
            v.push(format!(
                "{:.1} copies ({})",
                self.copies,
                crate::format::bytes(self.copy_bytes as i64)
            ));
        }
        if self.page_bytes >= 16.0 * 1024.0 * 1024.0 {
            v.push(format!(
                "{} of fresh host pages",
                crate::format::bytes(self.page_bytes as i64)
            ));
        }
        v
    }
}
