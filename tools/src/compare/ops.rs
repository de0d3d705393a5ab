//! Per CUDA op, both runs side by side: count, total time and the
//! percentiles, with count and total normalised per second of each run's
//! window so runs of different lengths compare.

use super::pair::{Pair, Presence};
use super::run::RunInfo;
use crate::explain::Report;
use crate::stats::OpStats;
use serde::Serialize;

/// One CUDA op in either run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpChange {
    /// Op name (`cudaStreamSynchronize`, ...).
    pub op: String,
    /// In both runs, gone or new.
    pub presence: Presence,
    /// Calls in the window.
    pub count: Pair,
    /// Calls per second of window.
    pub count_per_s: Pair,
    /// Time inside the op, ns.
    pub total_ns: Pair,
    /// Time inside the op per second of window, ns.
    pub total_ns_per_s: Pair,
    /// Median call time, ns.
    pub p50_ns: Pair,
    /// 99th percentile call time, ns.
    pub p99_ns: Pair,
    /// Bytes moved (copies), in each run.
    pub bytes: Pair,
    /// False when a run's percentiles come from sampled raw rows.
    pub exact: bool,
}

/// Every op of either run, most time per second (either run) first.
pub fn compare(base: &Report, new: &Report, runs: (&RunInfo, &RunInfo)) -> Vec<OpChange> {
    let (rb, rn) = runs;
    let mut names: Vec<&str> = Vec::new();
    for o in base.stats.ops.iter().chain(&new.stats.ops) {
        if !names.contains(&o.op.as_str()) {
            names.push(&o.op);
        }
    }
    let find = |r: &'_ Report, name: &str| r.stats.ops.iter().find(|o| o.op == name).cloned();
    let mut out: Vec<OpChange> = names
        .into_iter()
        .filter_map(|name| {
            let (b, n) = (find(base, name), find(new, name));
            let presence = Presence::of(b.is_some(), n.is_some())?;
            let get = |x: &Option<OpStats>, f: fn(&OpStats) -> f64| Some(x.as_ref().map_or(0.0, f));
            let pct = |x: &Option<OpStats>, f: fn(&OpStats) -> Option<i64>| {
                x.as_ref().and_then(f).map(|v| v as f64)
            };
            let count = Pair::of(get(&b, |o| o.count as f64), get(&n, |o| o.count as f64));
            let total = Pair::of(
                get(&b, |o| o.total_ns as f64),
                get(&n, |o| o.total_ns as f64),
            );
            let per_s = |p: Pair| {
                Pair::of(
                    p.base.and_then(|v| rb.per_window_s(v)),
                    p.new.and_then(|v| rn.per_window_s(v)),
                )
            };
            Some(OpChange {
                op: name.to_string(),
                presence,
                count,
                count_per_s: per_s(count),
                total_ns: total,
                total_ns_per_s: per_s(total),
                p50_ns: Pair::of(pct(&b, |o| o.p50_ns), pct(&n, |o| o.p50_ns)),
                p99_ns: Pair::of(pct(&b, |o| o.p99_ns), pct(&n, |o| o.p99_ns)),
                bytes: Pair::of(
                    get(&b, |o| o.total_bytes as f64),
                    get(&n, |o| o.total_bytes as f64),
                ),
                exact: b.iter().chain(n.iter()).all(|o| o.exact),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        let most = |o: &OpChange| {
            o.total_ns_per_s
                .base
                .unwrap_or(0.0)
                .max(o.total_ns_per_s.new.unwrap_or(0.0))
        };
        most(b).total_cmp(&most(a))
    });
    out
}
