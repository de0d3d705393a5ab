//! Per-op latency statistics: exact on raw rows, honest about sampled data.

use crate::dataset::{Call, Dataset};
use crate::error::Result;
use crate::percentile::{launch_row_weight, p50_p95_p99, weighted_p50_p95_p99};
use crate::scope::Scope;
use ingero_store::{AggSource, CudaApi, DbFormat, HostKind, OpClass, ResolvedWindow, TraceDb};
use serde::Serialize;
use std::collections::BTreeMap;

/// Latency statistics of one CUDA function.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpStats {
    /// Function name.
    pub op: String,
    /// Runtime or driver API.
    pub api: CudaApi,
    /// What the function does.
    pub class: OpClass,
    /// Calls made (all of them, including ones the recorder did not keep).
    pub count: i64,
    /// Calls kept as raw rows (the basis of the percentiles).
    pub raw_rows: i64,
    /// True when every call is a raw row, so every figure is exact.
    pub exact: bool,
    /// Time spent inside the function, ns.
    pub total_ns: i64,
    /// Mean duration, ns.
    pub mean_ns: f64,
    /// Median duration, ns (from raw rows).
    pub p50_ns: Option<i64>,
    /// 95th percentile, ns (from raw rows).
    pub p95_ns: Option<i64>,
    /// 99th percentile, ns (from raw rows).
    pub p99_ns: Option<i64>,
    /// Longest call, ns.
    pub max_ns: i64,
    /// p99 / p50: how heavy the tail is.
    pub tail_ratio: Option<f64>,
    /// Bytes copied or allocated.
    pub total_bytes: i64,
    /// Of `count`, calls made while another probed CUDA call of the same
    /// thread was in flight (the driver half of a runtime call, e.g.
    /// `cuLaunchKernel` inside `cudaLaunchKernel`): the same work as that
    /// call, so totals over ops leave them out.
    pub nested_count: i64,
    /// Of `total_ns`, the time of those nested calls (already inside the
    /// time of the calls they were made from).
    pub nested_ns: i64,
    /// Share of the time inside outer CUDA calls (of the ops listed with
    /// this one) that this op's outer calls make up; nested calls count
    /// under the call they were made from.
    pub share_of_cuda_time: f64,
    /// Where the numbers come from, in words.
    pub basis: String,
}

impl OpStats {
    /// Calls made from outside any other probed call (each logical call once).
    pub fn outer_count(&self) -> i64 {
        self.count - self.nested_count
    }

    /// Time of the outer calls, ns.
    pub fn outer_ns(&self) -> i64 {
        self.total_ns - self.nested_ns
    }
}

/// Totals of one kind of host event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostStats {
    /// Tracepoint name.
    pub event: String,
    /// Events counted.
    pub count: i64,
    /// Events kept as raw rows.
    pub raw_rows: i64,
    /// Summed duration (off-CPU time for context switches), ns.
    pub total_dur_ns: i64,
    /// Longest duration, ns.
    pub max_dur_ns: i64,
    /// Bytes (page allocations), summed.
    pub total_bytes: i64,
}

/// The window an answer covers, in absolute and capture-relative terms.
/// Absolute instants are decimal strings (epoch ns exceed what a JSON
/// double holds exactly); offsets from the capture start are exact integers.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WindowInfo {
    /// Window start, epoch ns, as a decimal string (exact).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub start_ns: i64,
    /// Window end, epoch ns, as a decimal string (exact).
    #[serde(with = "ingero_store::epoch_ns")]
    #[schemars(with = "ingero_store::epoch_ns::EpochNsText")]
    pub end_ns: i64,
    /// Window start, ns after the capture began.
    pub start_offset_ns: i64,
    /// Window end, ns after the capture began.
    pub end_offset_ns: i64,
    /// Window start in seconds after the capture began.
    pub start_offset_s: f64,
    /// Window length in seconds.
    pub duration_s: f64,
    /// True when the window is the whole capture.
    pub whole_capture: bool,
}

impl WindowInfo {
    /// Describes the dataset's window.
    pub fn of(ds: &Dataset) -> WindowInfo {
        WindowInfo {
            duration_s: ds.window_secs(),
            ..WindowInfo::between(ds.window, ds.span.start_ns, ds.whole_capture)
        }
    }

    /// Describes `window` of a capture that began at `capture_start_ns`.
    pub fn between(
        window: ResolvedWindow,
        capture_start_ns: i64,
        whole_capture: bool,
    ) -> WindowInfo {
        let start_offset_ns = window.lo_ns - capture_start_ns;
        WindowInfo {
            start_ns: window.lo_ns,
            end_ns: window.hi_ns,
            start_offset_ns,
            end_offset_ns: window.hi_ns - capture_start_ns,
            start_offset_s: start_offset_ns as f64 / 1e9,
            duration_s: window.duration_ns() as f64 / 1e9,
            whole_capture,
        }
    }
}

/// Answer of `get_trace_stats`: every op's statistics and host event totals.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpStatsReport {
    /// The window covered.
    pub window: WindowInfo,
    /// CUDA functions, most total time first.
    pub ops: Vec<OpStats>,
    /// Host events by kind.
    pub host: Vec<HostStats>,
    /// CUDA calls made, each logical call once: outer calls only (a driver
    /// call made inside a runtime call is part of that call).
    pub total_calls: i64,
    /// Time spent inside CUDA calls, ns: outer calls only, so nested time is
    /// not counted twice.
    pub cuda_api_time_ns: i64,
    /// Calls nested inside another call of their thread, shown per op and
    /// left out of `total_calls`.
    pub nested_calls: i64,
    /// Their time, ns, left out of `cuda_api_time_ns` (it lies inside the
    /// outer calls' time).
    pub nested_time_ns: i64,
    /// Events the capture reported lost.
    pub lost_events: i64,
    /// CUDA calls recorded without a return (ret -1: their thread exited
    /// inside; ret -2: still running at the stop); durations are lower bounds.
    pub unfinished_calls: i64,
    /// Caveats a reader needs (sampling, bucket rounding).
    pub notes: Vec<String>,
}

/// Computes the report for `scope`.
pub fn op_stats(db: &TraceDb, scope: &Scope) -> Result<OpStatsReport> {
    let ds = Dataset::load(db, scope)?;
    Ok(op_stats_of(&ds))
}

/// Computes the report from a loaded dataset.
pub fn op_stats_of(ds: &Dataset) -> OpStatsReport {
    let ops = ops_for(ds, ds.focus);
    let mut notes = Vec::new();
    if ops.iter().any(|o| !o.exact) {
        notes.push(
            "Some ops were sampled by the recorder: their counts, totals, means and maxima \
             cover every call, but percentiles come only from the kept raw rows (see each op's basis)."
                .to_string(),
        );
        if !ds.edge_sampled.is_empty() {
            notes.push(format!(
                "The window cuts {}-second buckets whose rows were sampled: near its edges only kept raw rows count, so counts there are lower bounds.",
                ds.bucket_ns / 1_000_000_000
            ));
        }
    }
    let nested_calls: i64 = ops.iter().map(|o| o.nested_count).sum();
    let nested_time_ns: i64 = ops.iter().map(|o| o.nested_ns).sum();
    if nested_calls > 0 {
        notes.push(format!(
            "Totals count each call once: {nested_calls} calls made inside another CUDA call of the \
             same thread (the driver half of a runtime call, {} inside them) appear under their \
             own op (nested_count) but are not added again.",
            crate::format::ns(nested_time_ns)
        ));
        if !nesting_recorded(ds) {
            notes.push(
                "This file does not record nesting: a driver call counts as nested when it lies \
                 inside a runtime call of its thread; for sampled ops the nested share of the kept \
                 raw rows is applied to the op's totals (an estimate)."
                    .to_string(),
            );
        }
    }
    notes.extend(crate::launch_levels::note(ds));
    let host = HostKind::ALL
        .iter()
        .filter_map(|k| {
            let t = ds.host_totals(*k, ds.focus);
            (t.count > 0).then(|| HostStats {
                event: k.name().to_string(),
                count: t.count,
                raw_rows: t.stored,
                total_dur_ns: t.sum_dur_ns,
                max_dur_ns: t.max_dur_ns,
                total_bytes: t.sum_bytes,
            })
        })
        .collect();
    OpStatsReport {
        window: WindowInfo::of(ds),
        total_calls: ops.iter().map(OpStats::outer_count).sum(),
        cuda_api_time_ns: ops.iter().map(OpStats::outer_ns).sum(),
        nested_calls,
        nested_time_ns,
        ops,
        host,
        lost_events: ds.lost_events,
        unfinished_calls: ds.unfinished_calls,
        notes,
    }
}

/// Statistics for every op, restricted to one process when `pid` is set.
pub fn ops_for(ds: &Dataset, pid: Option<i32>) -> Vec<OpStats> {
    let mut by_op: BTreeMap<u16, Vec<&Call>> = BTreeMap::new();
    for c in &ds.calls {
        if pid.is_none_or(|p| c.pid == p) {
            by_op.entry(c.op_id).or_default().push(c);
        }
    }
    for a in &ds.aggs {
        if a.source == AggSource::Cuda && a.count > 0 && pid.is_none_or(|p| a.pid == p) {
            by_op.entry(a.code as u16).or_default();
        }
    }
    let recorded = nesting_recorded(ds);
    let mut out: Vec<OpStats> = by_op
        .into_iter()
        .map(|(op_id, calls)| one_op(ds, op_id, &calls, pid, recorded))
        .collect();
    let outer_total: i64 = out.iter().map(OpStats::outer_ns).sum();
    for o in &mut out {
        o.share_of_cuda_time = if outer_total > 0 {
            (o.outer_ns().max(0) as f64 / outer_total as f64).clamp(0.0, 1.0)
        } else {
            0.0
        };
    }
    out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(a.op.cmp(&b.op)));
    out
}

/// True when the file records which calls are nested (native schema 2 on:
/// raw rows carry the flag and aggregates the nested parts); otherwise the
/// dataset infers it for raw rows from time containment.
fn nesting_recorded(ds: &Dataset) -> bool {
    matches!(ds.format, DbFormat::Native { version } if version >= 2)
}

/// Nested part (count, ns) of one op's aggregate rows.
fn agg_nested(ds: &Dataset, op_id: u16, pid: Option<i32>) -> (i64, i64) {
    ds.aggs
        .iter()
        .filter(|a| {
            a.source == AggSource::Cuda && a.code == op_id as i64 && pid.is_none_or(|p| a.pid == p)
        })
        .fold((0, 0), |(n, t), a| {
            (n + a.nested_count, t.saturating_add(a.nested_dur_ns))
        })
}

/// The raw rows of one launch op with their weights under launch rows:
/// nested rows (never sampled) and outer rows of at least `keep_ns` stand
/// for themselves; the shorter outer rows share the rest of the
/// `outer_launches`.
pub(crate) fn launch_row_weights(
    calls: &[&Call],
    keep_ns: i64,
    outer_launches: i64,
) -> Vec<(i64, f64)> {
    let long = calls
        .iter()
        .filter(|c| !c.nested && c.dur_ns >= keep_ns)
        .count() as i64;
    let short = calls
        .iter()
        .filter(|c| !c.nested && c.dur_ns < keep_ns)
        .count() as i64;
    calls
        .iter()
        .map(|c| {
            let w = if c.nested {
                1.0
            } else {
                launch_row_weight(c.dur_ns, keep_ns, outer_launches, long, short)
            };
            (c.dur_ns, w)
        })
        .collect()
}

/// The raw rows of one folded op with their weights under call folding:
/// rows of at least `keep_ns` stand for themselves (every such call is a
/// row); the shorter ones share the rest of the op's `calls`.
pub(crate) fn folded_row_weights(
    calls: &[&Call],
    keep_ns: i64,
    calls_counted: i64,
) -> Vec<(i64, f64)> {
    let long = calls.iter().filter(|c| c.dur_ns >= keep_ns).count() as i64;
    let short = calls.len() as i64 - long;
    calls
        .iter()
        .map(|c| {
            (
                c.dur_ns,
                launch_row_weight(c.dur_ns, keep_ns, calls_counted, long, short),
            )
        })
        .collect()
}

/// `part / whole` of `total`, rounded (0 when `whole` is 0).
fn scaled(total: i64, part: i64, whole: i64) -> i64 {
    if whole <= 0 {
        return 0;
    }
    ((total as f64) * (part as f64) / (whole as f64)).round() as i64
}

fn one_op(ds: &Dataset, op_id: u16, calls: &[&Call], pid: Option<i32>, recorded: bool) -> OpStats {
    let raw_n = calls.len() as i64;
    let raw_sum: i64 = calls.iter().map(|c| c.dur_ns).sum();
    let raw_nested_n = calls.iter().filter(|c| c.nested).count() as i64;
    let raw_nested_ns: i64 = calls.iter().filter(|c| c.nested).map(|c| c.dur_ns).sum();
    let raw_bytes: i64 = calls.iter().map(|c| c.bytes).sum();
    // Estimated durations (sampled launch timing) are means, not
    // measurements: the distribution is that of the timed calls.
    let estimated = calls.iter().filter(|c| c.estimated).count() as i64;
    let mut durs: Vec<i64> = calls
        .iter()
        .filter(|c| !c.estimated || estimated == raw_n)
        .map(|c| c.dur_ns)
        .collect();
    let timed_n = durs.len() as i64;
    let raw_max = durs.iter().copied().max().unwrap_or(0);
    let agg = ds.totals(AggSource::Cuda, Some(op_id as i64), pid);
    let edge_sampled = ds.edge_sampled.iter().any(|(p, s, c)| {
        *s == AggSource::Cuda && *c == op_id as i64 && pid.is_none_or(|f| f == *p)
    });
    let fully_stored = (agg.count == 0 || agg.stored >= agg.count) && !edge_sampled;
    let launch_keep = ds
        .launch_row_keep_ns
        .filter(|_| !fully_stored && estimated == 0 && ds.op_class(op_id) == OpClass::Launch);
    // Folded calls: every slow or failed call is a row, the fast ones a
    // sample; the kept rows are weighted back to every call, nested or not.
    let call_keep = ds
        .call_row_keep_ns
        .filter(|_| !fully_stored && ds.op_class(op_id) != OpClass::Launch);
    let (p50, p95, p99) = match (launch_keep, call_keep) {
        (_, Some(keep)) => {
            let mut weighted = folded_row_weights(calls, keep, agg.count);
            weighted_p50_p95_p99(&mut weighted)
        }
        (Some(keep), None) => {
            let (nested_n, _) = agg_nested(ds, op_id, pid);
            // Untimed launches not proven short have no known duration:
            // the distribution is of the others (the basis says so).
            let mut weighted =
                launch_row_weights(calls, keep, agg.count - nested_n - agg.unbounded());
            weighted_p50_p95_p99(&mut weighted)
        }
        (None, None) => p50_p95_p99(&mut durs),
    };
    let (count, total, max, bytes, exact, mut basis) = if fully_stored {
        (
            raw_n,
            raw_sum,
            raw_max,
            raw_bytes,
            true,
            format!("exact: all {raw_n} calls are raw rows"),
        )
    } else {
        (
            agg.count,
            agg.sum_dur_ns,
            agg.max_dur_ns.max(raw_max),
            agg.sum_bytes,
            false,
            format!(
                "sampled: percentiles from {raw_n} of {} calls kept as raw rows; count, total, mean and max cover all calls",
                agg.count
            ),
        )
    };
    // The nested part: exact from raw rows when every call is one, from the
    // aggregates' nested parts when the file records nesting, otherwise the
    // kept rows' nested share applied to the totals.
    let (nested_count, nested_ns, how) = if fully_stored {
        (
            raw_nested_n,
            raw_nested_ns,
            if recorded {
                "recorded"
            } else {
                "inferred from time containment"
            },
        )
    } else if recorded {
        let (n, t) = agg_nested(ds, op_id, pid);
        (n, t, "recorded")
    } else {
        (
            scaled(count, raw_nested_n, raw_n),
            scaled(total, raw_nested_ns, raw_sum),
            "estimated from the kept raw rows",
        )
    };
    if let (Some(keep), true) = (launch_keep, agg.estimated_count > 0) {
        basis.push_str(&format!(
            "; sampled launch timing: {} of the {} launches were not timed (each entered less \
             than {} after its thread's previous launch; one in K of those was timed), so their \
             share of the total is an estimate (each thread's mean of its timed ones); {} of them \
             are proven shorter than {} (their thread's next call entered sooner; those gaps sum \
             to {}, an upper bound of their time) and {} may have been longer (no call followed \
             within {}): their durations are unknown and left out of the percentiles, which \
             weight the timed rows (every timed launch of at least {} is a row, the shorter rows \
             stand for the shorter launches)",
            agg.estimated_count,
            count,
            crate::format::ns(keep),
            agg.estimated_bounded,
            crate::format::ns(keep),
            crate::format::ns(agg.estimated_bound_ns),
            agg.unbounded(),
            crate::format::ns(keep),
            crate::format::ns(keep),
        ));
    } else if let Some(keep) = call_keep {
        basis.push_str(&format!(
            "; call folding: every call of at least {} or failed kept its row and the faster \
             ones a sample per second, thread and op (the rest were counted in the kernel), so \
             the kept rows are weighted (the fast ones stand for the calls not kept) and the \
             percentiles are of all calls",
            crate::format::ns(keep)
        ));
    } else if let Some(keep) = launch_keep {
        basis.push_str(&format!(
            "; launch rows: every launch of at least {} kept its row and the shorter ones one in \
             K, so the kept rows are weighted (the short ones stand for the launches not kept) and \
             the percentiles are of all calls",
            crate::format::ns(keep)
        ));
    }
    if estimated > 0 {
        basis.push_str(&if estimated == raw_n {
            format!(
                "; none of the {raw_n} raw calls was timed (sampled launch timing): percentiles \
                 and max are of estimates (each thread's mean of its timed launches)"
            )
        } else {
            format!(
                "; {estimated} of the {raw_n} raw calls were not timed (sampled launch timing, \
                 cuda_calls.dur_estimated = 1: their duration is the thread's mean of its timed \
                 launches): percentiles and max are of the {timed_n} timed calls, totals include \
                 the estimates"
            )
        });
    }
    let nested_count = nested_count.clamp(0, count.max(0));
    let nested_ns = nested_ns.clamp(0, total.max(0));
    if nested_count > 0 {
        basis.push_str(&format!(
            "; {nested_count} of the calls ({nested_ns} ns) were nested inside another CUDA call \
             of their thread ({how}) and are left out of totals"
        ));
    }
    let info = ds.ops.get(&op_id);
    if info.is_some_and(|o| o.api == CudaApi::Runtime && o.class == OpClass::Launch) {
        if let Some(more) = crate::launch_levels::runtime_basis(ds) {
            basis.push_str(&more);
        }
    }
    OpStats {
        op: ds.op_name(op_id).to_string(),
        api: info.map_or(CudaApi::Runtime, |o| o.api),
        class: info.map_or(OpClass::Other, |o| o.class),
        count,
        raw_rows: raw_n,
        exact,
        total_ns: total,
        mean_ns: if count > 0 {
            total as f64 / count as f64
        } else {
            0.0
        },
        p50_ns: p50,
        p95_ns: p95,
        p99_ns: p99,
        max_ns: max,
        tail_ratio: match (p50, p99) {
            (Some(a), Some(b)) if a > 0 => Some(b as f64 / a as f64),
            _ => None,
        },
        total_bytes: bytes,
        nested_count,
        nested_ns,
        share_of_cuda_time: 0.0,
        basis,
    }
}
