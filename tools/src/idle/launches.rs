//! Host-side launch and synchronisation statistics of one process, and the
//! rule checks (Nsight- and HTA-style) evaluated on them.

use super::rule_check::RuleCheck;
use super::utilization::Utilization;
use crate::dataset::{Call, Dataset, SampledOps};
use ingero_store::activity::OpRole;
use ingero_store::{AggSource, CudaApi, OpClass};
use serde::Serialize;
use std::collections::BTreeMap;

/// CPU-side kernel-launch statistics (the host half of launch analysis).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LaunchStats {
    /// Kernel launches, each logical launch once (runtime calls, and driver
    /// calls made directly by the application), from the totals: every
    /// launch, kept as a raw row or not.
    pub launches: i64,
    /// CUDA graph launches (each enqueues many kernels).
    pub graph_launches: i64,
    /// Launches per second of lifetime.
    pub launches_per_s: f64,
    /// Median time inside a launch call, ns (raw rows).
    pub launch_p50_ns: Option<i64>,
    /// 99th percentile of launch call time, ns (raw rows).
    pub launch_p99_ns: Option<i64>,
    /// Launches per synchronisation: few means the host waits after every small batch of kernels.
    pub launches_per_sync: Option<f64>,
    /// Launches of at most 65,536 threads (grid x block), from the totals.
    pub small_launches: i64,
    /// Mean threads per launch where the geometry was read, `None` without any.
    pub mean_threads_per_launch: Option<f64>,
}

/// Calls that block the host until the GPU is done (Nsight's synchronous-operation rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SyncStats {
    /// Stream, device, context and event synchronisations (every call: the
    /// aggregates' count where raw rows were dropped).
    pub syncs: i64,
    /// Synchronous copies and memsets (every call, likewise).
    pub sync_copies: i64,
    /// Time spent in both, ns.
    pub time_ns: i64,
    /// Asynchronous copies of at least 1 MiB that ran below 8 GB/s (pageable
    /// source), among the raw rows.
    pub pageable_async_copies: i64,
}

/// Launch statistics of `pid` over its lifetime `span_ns`.
pub fn launch_stats(
    ds: &Dataset,
    pid: i32,
    calls: &[&Call],
    span_ns: i64,
    syncs: i64,
) -> LaunchStats {
    let mut launches = 0i64;
    let mut graph_launches = 0i64;
    let mut small = 0i64;
    // Outer launches per op, for weighting kept rows under launch rows, and
    // whether any launch went without its raw row.
    let mut outer_by_op: std::collections::BTreeMap<u16, i64> = Default::default();
    let mut rows_dropped = false;
    let rows: Vec<_> = ds
        .aggs
        .iter()
        .filter(|a| a.source == AggSource::Cuda && a.pid == pid)
        .collect();
    // Files that did not record nesting: count the runtime's launches where
    // the process made any, so the driver call inside each is not counted again.
    let nesting_recorded = rows.iter().any(|a| a.nested_count > 0);
    let is_runtime =
        |code: i64| ds.ops.get(&(code as u16)).map(|o| o.api) == Some(CudaApi::Runtime);
    let runtime_only = !nesting_recorded
        && rows
            .iter()
            .any(|a| is_runtime(a.code) && ds.op_class(a.code as u16) == OpClass::Launch);
    for a in rows {
        if runtime_only && !is_runtime(a.code) {
            continue;
        }
        match ds.op_class(a.code as u16) {
            OpClass::Launch => {
                launches += a.outer_count();
                *outer_by_op.entry(a.code as u16).or_default() += a.outer_count();
                rows_dropped |= a.count > a.stored;
                small += a.small_launches - a.nested_small_launches;
            }
            OpClass::GraphLaunch => graph_launches += a.outer_count(),
            _ => {}
        }
    }
    let raw: Vec<&&Call> = calls
        .iter()
        .filter(|c| ds.op_class(c.op_id) == OpClass::Launch && !c.nested)
        .collect();
    launches = launches.max(raw.len() as i64);
    // Geometry is read on the outer launch; a nested driver launch repeats it.
    let outer_threads: i64 = raw.iter().map(|c| c.threads).sum();
    let with_geometry = raw.iter().filter(|c| c.threads > 0).count() as i64;
    let (p50, _, p99) = match ds.launch_row_keep_ns {
        // Launch rows: every long launch kept, short ones one in K, so each
        // op's kept rows are weighted to stand for all its outer launches.
        Some(keep) if rows_dropped => {
            let mut by_op: std::collections::BTreeMap<u16, Vec<&Call>> = Default::default();
            for c in &raw {
                by_op.entry(c.op_id).or_default().push(**c);
            }
            let mut weighted: Vec<(i64, f64)> = Vec::with_capacity(raw.len());
            for (op, rows) in &by_op {
                let outer = outer_by_op.get(op).copied().unwrap_or(rows.len() as i64);
                weighted.extend(crate::stats::launch_row_weights(rows, keep, outer));
            }
            crate::percentile::weighted_p50_p95_p99(&mut weighted)
        }
        _ => {
            let mut durs: Vec<i64> = raw.iter().map(|c| c.dur_ns).collect();
            crate::percentile::p50_p95_p99(&mut durs)
        }
    };
    let mean_threads = if with_geometry > 0 {
        Some(outer_threads as f64 / with_geometry as f64)
    } else {
        None
    };
    LaunchStats {
        launches,
        graph_launches,
        launches_per_s: launches as f64 / (span_ns.max(1) as f64 / 1e9),
        launch_p50_ns: p50,
        launch_p99_ns: p99,
        launches_per_sync: (syncs > 0).then(|| (launches + graph_launches) as f64 / syncs as f64),
        small_launches: small,
        mean_threads_per_launch: mean_threads,
    }
}

/// Synchronisation statistics of one process: the raw rows classify each op,
/// the aggregates count its calls where rows were dropped.
pub fn sync_stats(
    ds: &Dataset,
    roles: &BTreeMap<u16, OpRole>,
    calls: &[&Call],
    sampled: &SampledOps,
) -> SyncStats {
    let role = |op: u16| roles.get(&op).copied().unwrap_or_default();
    let mut s = SyncStats::default();
    // The ops every call of which blocks the host, counted in full (an op
    // whose rows were all dropped under call folding included).
    for op in sampled.ops() {
        if ds.op_class(op) == OpClass::Sync {
            s.syncs += sampled.count(op);
        } else if role(op).sync_copy {
            s.sync_copies += sampled.count(op);
        } else {
            continue;
        }
        s.time_ns += sampled.dur_ns(op);
    }
    // Slow asynchronous copies (pageable sources) always keep their rows.
    for c in calls.iter().filter(|c| !c.nested) {
        if ds.op_class(c.op_id) == OpClass::Copy
            && role(c.op_id).async_work
            && c.bytes >= 1 << 20
            && c.dur_ns > 0
            && (c.bytes as f64 * 1e9 / c.dur_ns as f64) < 8e9
        {
            s.pageable_async_copies += 1;
        }
    }
    s
}

/// The rule checks.
pub fn rule_checks(
    gaps: usize,
    gaps_ns: i64,
    util: &Utilization,
    sync: &SyncStats,
    launches: &LaunchStats,
) -> Vec<RuleCheck> {
    let check = |rule: &str, triggered: bool, detail: String| RuleCheck {
        rule: rule.to_string(),
        title: rule_title(rule).to_string(),
        triggered,
        detail,
    };
    let count = crate::format::count;
    let ns = crate::format::ns;
    vec![
        check(
            "gpu_gaps",
            gaps > 0,
            format!(
                "{} gaps of at least 500 ms with no GPU work ({}), {} in all",
                count(gaps as i64),
                util.basis,
                ns(gaps_ns)
            ),
        ),
        check(
            "gpu_time_utilization",
            util.low_chunks > 0,
            format!(
                "{} of {} equal chunks of the lifetime had the GPU busy under 50% of the time ({})",
                util.low_chunks, util.chunks, util.basis
            ),
        ),
        check(
            "pageable_async_copies",
            sync.pageable_async_copies > 0,
            format!(
                "{} asynchronous copies of at least 1 MiB ran below 8 GB/s (pageable source: they block the host)",
                count(sync.pageable_async_copies)
            ),
        ),
        check(
            "synchronous_operations",
            sync.syncs + sync.sync_copies > 0,
            format!(
                "{} synchronisations and {} synchronous copies/memsets, {} blocking the host",
                count(sync.syncs),
                count(sync.sync_copies),
                ns(sync.time_ns)
            ),
        ),
        check(
            "launch_statistics",
            launches.launches_per_sync.is_some_and(|v| v < 5.0),
            format!(
                "{} launches ({:.1}/s, {} of them small: at most 65,536 threads), CPU launch time p50 {} / p99 {}, {} launches per synchronisation",
                count(launches.launches),
                launches.launches_per_s,
                count(launches.small_launches),
                crate::format::opt_ns(launches.launch_p50_ns),
                crate::format::opt_ns(launches.launch_p99_ns),
                launches
                    .launches_per_sync
                    .map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"))
            ),
        ),
    ]
}

/// A rule's name for a reader, by its id.
fn rule_title(rule: &str) -> &'static str {
    match rule {
        "gpu_gaps" => "Idle gaps of 500 ms or more",
        "gpu_time_utilization" => "GPU time utilisation",
        "pageable_async_copies" => "Pageable asynchronous copies",
        "synchronous_operations" => "Synchronous operations",
        "launch_statistics" => "Kernel launch statistics",
        _ => "Rule check",
    }
}
