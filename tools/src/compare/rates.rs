//! Rates that say whether the loop runs differently: steps and launches per
//! second, copy bandwidth, page allocations, context switches and NVML busy,
//! each normalised so runs of different lengths compare.

use super::pair::{ratio, Pair};
use super::run::{main_idle, RunInfo};
use crate::explain::Report;
use crate::processes::Role;
use ingero_store::OpClass;
use serde::Serialize;

/// One rate in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RateChange {
    /// Stable name (`launches_per_s`, `copy_bandwidth`, ...).
    pub name: String,
    /// What it measures, in words.
    pub what: String,
    /// Unit (`1/s`, `bytes/s`, `bytes`, `ratio`, `count`).
    pub unit: String,
    /// The figure in each run.
    pub value: Pair,
}

fn rate(name: &str, what: &str, unit: &str, value: Pair) -> Option<RateChange> {
    (value.base.is_some() || value.new.is_some()).then(|| RateChange {
        name: name.to_string(),
        what: what.to_string(),
        unit: unit.to_string(),
        value,
    })
}

/// Copy bytes over time inside copies (bytes/s while copying), and bytes
/// copied in all.
fn copies(r: &Report) -> (f64, f64) {
    let (bytes, ns) = r
        .stats
        .ops
        .iter()
        .filter(|o| o.class == OpClass::Copy && o.total_bytes > 0)
        .fold((0i64, 0i64), |(b, t), o| {
            (b + o.total_bytes, t + o.total_ns)
        });
    (bytes as f64, ns as f64)
}

/// Context switches and page allocations of the job's processes (main and
/// helpers) and of all processes.
fn host_totals(r: &Report) -> [f64; 4] {
    let mut out = [0.0; 4];
    for p in &r.processes.processes {
        let job = p.role != Role::External;
        if job {
            out[0] += p.context_switches as f64;
            out[2] += p.page_allocs as f64;
        }
        out[1] += p.context_switches as f64;
        out[3] += p.page_allocs as f64;
    }
    out
}

/// The rates of both runs; those known in neither are left out.
pub fn compare(base: &Report, new: &Report, runs: (&RunInfo, &RunInfo)) -> Vec<RateChange> {
    let (rb, rn) = runs;
    let (mb, mn) = (main_idle(base), main_idle(new));
    let both = |f: &dyn Fn(&Report, &RunInfo) -> Option<f64>| Pair::of(f(base, rb), f(new, rn));
    let main = |f: &dyn Fn(&crate::idle::ProcessIdle) -> Option<f64>| {
        Pair::of(mb.and_then(f), mn.and_then(f))
    };
    let (cb, cn) = (copies(base), copies(new));
    let (hb, hn) = (host_totals(base), host_totals(new));
    let host = |i: usize| Pair::of(rb.per_window_s(hb[i]), rn.per_window_s(hn[i]));
    [
        rate(
            "steps_per_s",
            "training steps per second (one over the step period)",
            "1/s",
            both(&|_, r| r.step_period_ns.and_then(|p| ratio(1e9, p as f64))),
        ),
        rate(
            "launches_per_s",
            "kernel launches of the main GPU process per second of its window",
            "1/s",
            main(&|p| Some(p.launches.launches_per_s)),
        ),
        rate(
            "launches_per_step",
            "kernel launches per step",
            "count",
            main(&|p| p.per_step.as_ref().map(|s| s.launches)),
        ),
        rate(
            "copy_bandwidth",
            "bytes copied per second spent inside copy calls",
            "bytes/s",
            Pair::of(ratio(cb.0, cb.1 / 1e9), ratio(cn.0, cn.1 / 1e9)),
        ),
        rate(
            "copy_bytes_per_s",
            "bytes copied per second of window",
            "bytes/s",
            Pair::of(rb.per_window_s(cb.0), rn.per_window_s(cn.0)),
        ),
        rate(
            "page_allocs_per_s",
            "page allocations of the job's processes per second of window",
            "1/s",
            host(2),
        ),
        rate(
            "page_allocs_all_per_s",
            "page allocations of every process per second of window",
            "1/s",
            host(3),
        ),
        rate(
            "page_bytes_per_step",
            "fresh host memory the GPU process was given per step",
            "bytes",
            main(&|p| p.per_step.as_ref().map(|s| s.page_bytes)),
        ),
        rate(
            "context_switches_per_s",
            "context switches of the job's processes per second of window",
            "1/s",
            host(0),
        ),
        rate(
            "context_switches_all_per_s",
            "context switches of every process per second of window",
            "1/s",
            host(1),
        ),
        rate(
            "nvml_busy_share",
            "GPU busy share measured by NVML (absent where the file has no samples)",
            "ratio",
            main(&|p| {
                (!p.busy_is_upper_bound)
                    .then(|| ratio(p.busy_ns as f64, p.span_ns as f64))
                    .flatten()
            }),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}
