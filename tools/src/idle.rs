//! How idle the GPU was, per process and stream, and why: the GPU-idle
//! breakdown that leads every report.
//!
//! Without GPU-side timestamps the GPU is taken as busy while the host is
//! inside a CUDA call, and from an asynchronous launch or copy until the
//! synchronisation that waits for it returns (an upper bound on busy, so the
//! idle figure is a lower bound). Everything else in the process's lifetime
//! is host wait: the GPU had no work from this process. Host wait is then
//! split by what the GPU-driving thread was doing: off-CPU (preempted,
//! blocked, waiting on DataLoader workers) or on-CPU outside CUDA (Python-side
//! input preparation, page-allocation storms).

use crate::dataset::{Call, Dataset};
use crate::processes::{main_processes, role_of, Role};
use ingero_store::{AggSource, HostKind, OpClass};
use serde::Serialize;
use std::collections::BTreeMap;

/// Idle gaps at least this long are listed (Nsight's "GPU gaps" rule).
pub const GAP_THRESHOLD_NS: i64 = 500_000_000;
/// Chunks the lifetime is cut into for the utilisation rule.
pub const UTILIZATION_CHUNKS: usize = 30;
/// A chunk below this busy share counts as under-utilised.
pub const UTILIZATION_LOW: f64 = 0.5;
/// Page-allocation rate (bytes/s) from which on-CPU host wait is blamed on a storm.
const STORM_RATE: f64 = 256.0 * 1024.0 * 1024.0;

/// Where host-wait time went, ns. The parts add up to the host wait.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HostWaitCauses {
    /// Before the process's first CUDA call (start-up, imports, data loading).
    pub before_first_call_ns: i64,
    /// GPU thread off-CPU after a preemption (waiting in the run queue).
    pub off_cpu_preempted_ns: i64,
    /// GPU thread blocked while DataLoader workers were alive (waiting on them).
    pub waiting_on_workers_ns: i64,
    /// GPU thread blocked for another reason (I/O, locks, sleeps).
    pub off_cpu_blocked_ns: i64,
    /// GPU thread off-CPU, recorder did not say whether preempted or blocked.
    pub off_cpu_unknown_ns: i64,
    /// GPU thread on-CPU outside CUDA during a page-allocation storm of its process.
    pub page_alloc_storm_ns: i64,
    /// GPU thread on-CPU outside CUDA otherwise: Python-side work such as
    /// per-sample fetch and collate.
    pub host_compute_ns: i64,
    /// After the process's last recorded CUDA call (no raw rows to say more).
    pub after_last_call_ns: i64,
}

/// One idle gap.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IdleGap {
    /// Start, seconds after the capture began.
    pub start_offset_s: f64,
    /// Length, ns.
    pub dur_ns: i64,
}

/// CPU-side kernel-launch statistics (the host half of launch analysis).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LaunchStats {
    /// Kernel launches (runtime and driver).
    pub launches: i64,
    /// Launches per second of lifetime.
    pub launches_per_s: f64,
    /// Median time inside a launch call, ns.
    pub launch_p50_ns: Option<i64>,
    /// 99th percentile of launch call time, ns.
    pub launch_p99_ns: Option<i64>,
    /// Launches per synchronisation: few means the host waits after every small batch of kernels.
    pub launches_per_sync: Option<f64>,
}

/// Calls that block the host until the GPU is done (Nsight's synchronous-operation rules).
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct SyncStats {
    /// Stream, device, context and event synchronisations.
    pub syncs: i64,
    /// Synchronous copies and memsets.
    pub sync_copies: i64,
    /// Time spent in both, ns.
    pub time_ns: i64,
    /// Asynchronous copies of at least 1 MiB that ran below 8 GB/s (pageable source).
    pub pageable_async_copies: i64,
}

/// GPU time utilisation over equal chunks of the lifetime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Utilization {
    /// Number of chunks.
    pub chunks: usize,
    /// Chunks whose busy share is under 50%.
    pub low_chunks: usize,
    /// Busy share per chunk, 0-1.
    pub busy_share: Vec<f64>,
}

/// One check from the usual GPU-profiling rule sets, evaluated on this trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RuleCheck {
    /// Rule name (`gpu_gaps`, `gpu_time_utilization`, `pageable_async_copies`,
    /// `synchronous_operations`, `launch_statistics`).
    pub rule: String,
    /// True when the trace shows the problem the rule looks for.
    pub triggered: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

/// Idle breakdown of one stream.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StreamIdle {
    /// Stream handle (0 = default or unknown).
    pub stream: i64,
    /// Time inside CUDA calls on this stream, ns.
    pub api_ns: i64,
    /// Busy time, ns.
    pub busy_ns: i64,
    /// Idle share of the process lifetime.
    pub idle_share: f64,
}

/// Idle breakdown of one GPU-driving process.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessIdle {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// The thread that made most CUDA calls.
    pub gpu_thread: i32,
    /// Lifetime of the process within the window, ns.
    pub span_ns: i64,
    /// GPU busy for this process (upper bound), ns.
    pub busy_ns: i64,
    /// Of which inside CUDA calls (runtime calls and the driver calls nested
    /// in them counted once), ns.
    pub api_ns: i64,
    /// GPU without work from this process, ns.
    pub host_wait_ns: i64,
    /// host_wait / span.
    pub idle_share: f64,
    /// From the first CUDA call to the end of the last one, ns.
    pub active_span_ns: i64,
    /// Idle share within that active span: start-up before the first call and
    /// the tail after the last one left out.
    pub active_idle_share: f64,
    /// Why the host did not feed the GPU.
    pub causes: HostWaitCauses,
    /// Idle gaps of at least 500 ms.
    pub long_gaps: usize,
    /// Their total, ns.
    pub long_gaps_ns: i64,
    /// The longest of them.
    pub longest_gaps: Vec<IdleGap>,
    /// Median time between successive synchronisations (one training step when
    /// the loop syncs once per step), ns.
    pub step_period_ns: Option<i64>,
    /// Utilisation over 30 chunks.
    pub utilization: Utilization,
    /// Launch statistics.
    pub launches: LaunchStats,
    /// Synchronous operations.
    pub sync: SyncStats,
    /// Per-stream split.
    pub streams: Vec<StreamIdle>,
    /// Nsight- and HTA-style rule checks.
    pub rules: Vec<RuleCheck>,
    /// How solid the figures are.
    pub basis: Vec<String>,
}

/// Idle breakdown for every GPU-driving root process, most CUDA time first.
pub fn idle_of(ds: &Dataset) -> Vec<ProcessIdle> {
    let (mains, cuda) = main_processes(ds);
    let mut out = Vec::new();
    for pid in cuda {
        if let Some(p) = one(ds, pid, &mains) {
            out.push(p);
        }
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.api_ns));
    out
}

/// How an op takes part in the busy model, decided once per op id.
#[derive(Debug, Clone, Copy, Default)]
struct OpRole {
    /// Enqueues GPU work and returns (launches, async copies and memsets).
    async_work: bool,
    /// Blocks until queued work is done.
    sync: bool,
    /// The sync covers every stream (device/context sync, synchronous copy).
    device_wide: bool,
    /// A synchronous copy or memset.
    sync_copy: bool,
}

fn op_roles(ds: &Dataset) -> BTreeMap<u16, OpRole> {
    ds.ops
        .iter()
        .map(|(id, info)| {
            let name = info.name.as_str();
            let sync_copy = match info.class {
                OpClass::Copy => !name.contains("Async"),
                OpClass::Other => name.starts_with("cudaMemset") && !name.contains("Async"),
                _ => false,
            };
            let role = OpRole {
                async_work: match info.class {
                    OpClass::Launch => true,
                    OpClass::Copy | OpClass::Other => name.contains("Async"),
                    _ => false,
                },
                sync: info.class == OpClass::Sync || sync_copy,
                device_wide: sync_copy || name.contains("Device") || name.contains("Ctx"),
                sync_copy,
            };
            (*id, role)
        })
        .collect()
}

/// A synchronisation shorter than this returned at once: the queued work had
/// already finished, at a moment the host cannot see.
pub const SYNC_WAITED_NS: i64 = 100_000;

/// Busy intervals: every call, plus queued work from the first asynchronous
/// op after a sync to the end of a sync that really waited for it.
fn busy_intervals(roles: &BTreeMap<u16, OpRole>, calls: &[&Call]) -> Vec<(i64, i64)> {
    let mut out = Vec::with_capacity(calls.len() + calls.len() / 4);
    let mut pending: BTreeMap<i64, i64> = BTreeMap::new(); // stream -> first queued ts
    let mut last_end = i64::MIN;
    for c in calls {
        let end = c.ts_ns + c.dur_ns;
        out.push((c.ts_ns, end));
        last_end = last_end.max(end);
        let role = roles.get(&c.op_id).copied().unwrap_or_default();
        if role.async_work {
            pending.entry(c.stream_key()).or_insert(c.ts_ns);
        } else if role.sync {
            let waited = c.dur_ns >= SYNC_WAITED_NS;
            if role.device_wide || c.stream_key() == 0 {
                for (_, start) in std::mem::take(&mut pending) {
                    if waited {
                        out.push((start, end));
                    }
                }
            } else if let Some(start) = pending.remove(&c.stream_key()) {
                if waited {
                    out.push((start, end));
                }
            }
        }
    }
    for (_, start) in pending {
        out.push((start, last_end));
    }
    out
}

/// Sorted, merged union of intervals clipped to `span`.
fn union(mut v: Vec<(i64, i64)>, span: (i64, i64)) -> Vec<(i64, i64)> {
    v.retain(|(a, b)| *b > span.0 && *a < span.1 && b > a);
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        let (a, b) = (a.max(span.0), b.min(span.1));
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn total(v: &[(i64, i64)]) -> i64 {
    v.iter().map(|(a, b)| b - a).sum()
}

/// Complement of `busy` within `span`.
fn gaps(busy: &[(i64, i64)], span: (i64, i64)) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut cursor = span.0;
    for (a, b) in busy {
        if *a > cursor {
            out.push((cursor, *a));
        }
        cursor = cursor.max(*b);
    }
    if cursor < span.1 {
        out.push((cursor, span.1));
    }
    out
}

fn overlap(a: (i64, i64), b: (i64, i64)) -> i64 {
    (a.1.min(b.1) - a.0.max(b.0)).max(0)
}

fn one(ds: &Dataset, pid: i32, mains: &[i32]) -> Option<ProcessIdle> {
    let calls: Vec<&Call> = ds.calls.iter().filter(|c| c.pid == pid).collect();
    let agg = ds.totals(AggSource::Cuda, None, Some(pid));
    if calls.is_empty() && agg.count == 0 {
        return None;
    }
    let proc_info = ds.processes.get(&pid);
    let lo = proc_info
        .map_or(ds.window.lo_ns, |p| p.first_seen_ns)
        .max(ds.window.lo_ns)
        .max(ds.span.start_ns);
    let hi = proc_info
        .map_or(ds.window.hi_ns, |p| p.last_seen_ns.max(p.first_seen_ns))
        .min(ds.window.hi_ns);
    let hi = hi.max(
        calls
            .last()
            .map_or(lo, |c| c.ts_ns + c.dur_ns)
            .min(ds.window.hi_ns),
    );
    let span = (lo, hi.max(lo + 1));
    let span_ns = span.1 - span.0;

    let raw_api: i64 = calls.iter().map(|c| c.dur_ns).sum();
    let roles = op_roles(ds);
    let is_sync_copy = |c: &Call| roles.get(&c.op_id).is_some_and(|r| r.sync_copy);
    let busy_iv = union(busy_intervals(&roles, &calls), span);
    let mut basis = Vec::new();
    // Calls the recorder counted but did not keep cannot be placed in time:
    // count their duration as busy anyway, so idle stays a lower bound.
    let unplaced = if agg.count > agg.stored {
        let extra = (agg.sum_dur_ns - raw_api).max(0);
        basis.push(format!(
            "{} calls were counted but not kept as raw rows; their {} ns of API time count as busy but cannot be placed in time",
            agg.count - agg.stored,
            extra
        ));
        extra
    } else {
        0
    };
    let busy_ns = (total(&busy_iv) + unplaced).min(span_ns);
    let host_wait = span_ns - busy_ns;
    basis.push(
        "busy = inside CUDA calls, or between an asynchronous launch/copy and a synchronisation that waited for it (no GPU timestamps: an estimate that leans towards busy)".to_string(),
    );

    let gpu_thread = ds.gpu_thread(pid).unwrap_or(pid);
    let first_call = calls.first().map_or(span.1, |c| c.ts_ns);
    let last_call_end = calls
        .iter()
        .map(|c| c.ts_ns + c.dur_ns)
        .max()
        .unwrap_or(span.0);

    let gap_iv = gaps(&busy_iv, span);
    let mut causes = HostWaitCauses::default();
    let workers: Vec<(i64, i64)> = ds
        .processes
        .values()
        .filter(|p| {
            matches!(role_of(ds, p.pid, mains, &[pid]).0, Role::DataloaderWorker)
                && ds.descends_from(p.pid, pid)
        })
        .map(|p| (p.first_seen_ns, p.last_seen_ns))
        .collect();
    let workers_alive = |t: i64| workers.iter().any(|(a, b)| t >= *a && t <= *b);
    let switches: Vec<_> = ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.pid == pid && h.tid == gpu_thread)
        .collect();
    let storm_buckets: Vec<i64> = {
        let width_s = ds.bucket_ns as f64 / 1e9;
        ds.aggs
            .iter()
            .filter(|a| {
                a.source == AggSource::Host
                    && a.code == HostKind::PageAlloc.id() as i64
                    && a.pid == pid
                    && a.sum_bytes as f64 / width_s >= STORM_RATE
            })
            .map(|a| a.bucket_ns)
            .collect::<std::collections::BTreeSet<i64>>()
            .into_iter()
            .collect()
    };
    let mut long_gaps: Vec<(i64, i64)> = Vec::new();
    let mut sw_i = 0usize;
    for &(a, b) in &gap_iv {
        if b - a >= GAP_THRESHOLD_NS {
            long_gaps.push((a, b));
        }
        // Before the first call and after the last one the thread is not feeding anyone.
        let pre = overlap((a, b), (span.0, first_call));
        causes.before_first_call_ns += pre;
        let post = overlap((a, b), (last_call_end, span.1));
        causes.after_last_call_ns += post;
        let (a, b) = (a.max(first_call), b.min(last_call_end));
        if b <= a {
            continue;
        }
        let mut off = 0i64;
        while sw_i > 0 && switches[sw_i - 1].ts_ns + switches[sw_i - 1].dur_ns > a {
            sw_i -= 1;
        }
        let mut j = sw_i;
        while j < switches.len() && switches[j].ts_ns < b {
            let h = switches[j];
            let o = overlap((a, b), (h.ts_ns, h.ts_ns + h.dur_ns));
            if o > 0 {
                off += o;
                match h.arg {
                    1 => causes.off_cpu_preempted_ns += o,
                    0 if workers_alive(h.ts_ns) => causes.waiting_on_workers_ns += o,
                    0 => causes.off_cpu_blocked_ns += o,
                    _ => causes.off_cpu_unknown_ns += o,
                }
            }
            j += 1;
        }
        sw_i = j.saturating_sub(1);
        let on_cpu = (b - a - off).max(0);
        let first = storm_buckets.partition_point(|s| s + ds.bucket_ns <= a);
        let in_storm: i64 = storm_buckets[first..]
            .iter()
            .take_while(|s| **s < b)
            .map(|s| overlap((a, b), (*s, *s + ds.bucket_ns)))
            .sum::<i64>()
            .min(on_cpu);
        causes.page_alloc_storm_ns += in_storm;
        causes.host_compute_ns += on_cpu - in_storm;
    }
    // Unplaced busy time was counted inside the gaps above; take it back out
    // of the on-CPU share, where the unkept calls most likely ran.
    let attributed = causes.before_first_call_ns
        + causes.off_cpu_preempted_ns
        + causes.waiting_on_workers_ns
        + causes.off_cpu_blocked_ns
        + causes.off_cpu_unknown_ns
        + causes.page_alloc_storm_ns
        + causes.host_compute_ns
        + causes.after_last_call_ns;
    let mut surplus = attributed - host_wait;
    for part in [
        &mut causes.host_compute_ns,
        &mut causes.page_alloc_storm_ns,
        &mut causes.after_last_call_ns,
    ] {
        let take = surplus.clamp(0, *part);
        *part -= take;
        surplus -= take;
    }
    if switches.iter().all(|h| h.arg < 0) && !switches.is_empty() {
        basis.push("the recorder did not mark which context switches were preemptions".to_string());
    }
    let pid_sw = ds.host_totals(HostKind::SchedSwitch, Some(pid));
    if pid_sw.count > pid_sw.stored {
        basis.push(
            "some context switches of this process were not kept as raw rows: off-CPU parts are lower bounds"
                .to_string(),
        );
    }

    long_gaps.sort_by_key(|g| std::cmp::Reverse(g.1 - g.0));
    let longest_gaps = long_gaps
        .iter()
        .take(5)
        .map(|(a, b)| IdleGap {
            start_offset_s: (a - ds.span.start_ns) as f64 / 1e9,
            dur_ns: b - a,
        })
        .collect();

    let utilization = {
        let n = UTILIZATION_CHUNKS;
        let width = (span_ns / n as i64).max(1);
        // One pass: each busy interval adds to the chunks it covers.
        let mut busy_in = vec![0i64; n];
        for &(a, b) in &busy_iv {
            let first = ((a - span.0) / width).clamp(0, n as i64 - 1) as usize;
            let last = ((b - span.0) / width).clamp(0, n as i64 - 1) as usize;
            for (i, slot) in busy_in.iter_mut().enumerate().take(last + 1).skip(first) {
                let c = (span.0 + i as i64 * width, span.0 + (i as i64 + 1) * width);
                *slot += overlap((a, b), c);
            }
        }
        let busy_share: Vec<f64> = busy_in.iter().map(|b| *b as f64 / width as f64).collect();
        Utilization {
            chunks: n,
            low_chunks: busy_share.iter().filter(|b| **b < UTILIZATION_LOW).count(),
            busy_share,
        }
    };

    // A driver launch inside a runtime launch is the same kernel: count the
    // outermost calls, and the totals of the API that makes them.
    let launch_calls: Vec<i64> = calls
        .iter()
        .filter(|c| ds.op_class(c.op_id) == OpClass::Launch && !c.nested)
        .map(|c| c.dur_ns)
        .collect();
    let runtime_launches = calls.iter().any(|c| {
        ds.op_class(c.op_id) == OpClass::Launch
            && ds.ops.get(&c.op_id).map(|o| o.api) == Some(ingero_store::CudaApi::Runtime)
    });
    let launch_total = ds
        .aggs
        .iter()
        .filter(|a| {
            a.source == AggSource::Cuda
                && a.pid == pid
                && ds.op_class(a.code as u16) == OpClass::Launch
                && (!runtime_launches
                    || ds.ops.get(&(a.code as u16)).map(|o| o.api)
                        == Some(ingero_store::CudaApi::Runtime))
        })
        .map(|a| a.count)
        .sum::<i64>()
        .max(launch_calls.len() as i64);
    let sync_calls: Vec<&&Call> = calls
        .iter()
        .filter(|c| ds.op_class(c.op_id) == OpClass::Sync)
        .collect();
    let sync_copies = calls.iter().filter(|c| is_sync_copy(c)).count() as i64;
    let mut l = launch_calls.clone();
    let (p50, _, p99) = crate::percentile::p50_p95_p99(&mut l);
    let launches = LaunchStats {
        launches: launch_total,
        launches_per_s: launch_total as f64 / (span_ns as f64 / 1e9),
        launch_p50_ns: p50,
        launch_p99_ns: p99,
        launches_per_sync: (!sync_calls.is_empty())
            .then(|| launch_total as f64 / sync_calls.len() as f64),
    };
    let step_period_ns = {
        let mut d: Vec<i64> = sync_calls
            .windows(2)
            .map(|w| w[1].ts_ns - w[0].ts_ns)
            .collect();
        crate::percentile::p50_p95_p99(&mut d).0
    };
    let sync = SyncStats {
        syncs: sync_calls.len() as i64,
        sync_copies,
        time_ns: sync_calls.iter().map(|c| c.dur_ns).sum::<i64>()
            + calls
                .iter()
                .filter(|c| is_sync_copy(c))
                .map(|c| c.dur_ns)
                .sum::<i64>(),
        pageable_async_copies: calls
            .iter()
            .filter(|c| {
                ds.op_class(c.op_id) == OpClass::Copy
                    && !c.nested
                    && roles.get(&c.op_id).is_some_and(|r| r.async_work)
                    && c.bytes >= 1 << 20
                    && c.dur_ns > 0
                    && (c.bytes as f64 * 1e9 / c.dur_ns as f64) < 8e9
            })
            .count() as i64,
    };

    let mut by_stream: BTreeMap<i64, Vec<&Call>> = BTreeMap::new();
    for c in &calls {
        by_stream.entry(c.stream_key()).or_default().push(c);
    }
    let single_stream = by_stream.len() == 1;
    let streams = by_stream
        .into_iter()
        .map(|(stream, cs)| {
            let b = if single_stream {
                total(&busy_iv)
            } else {
                total(&union(busy_intervals(&roles, &cs), span))
            };
            StreamIdle {
                stream,
                api_ns: cs.iter().map(|c| c.dur_ns).sum(),
                busy_ns: b,
                idle_share: 1.0 - b as f64 / span_ns as f64,
            }
        })
        .collect();

    let rules = rule_checks(
        long_gaps.len(),
        long_gaps.iter().map(|(a, b)| b - a).sum(),
        &utilization,
        &sync,
        &launches,
    );
    let active_span_ns = (span_ns - causes.before_first_call_ns - causes.after_last_call_ns).max(1);
    let active_wait = host_wait - causes.before_first_call_ns - causes.after_last_call_ns;
    Some(ProcessIdle {
        active_span_ns,
        active_idle_share: (active_wait.max(0) as f64 / active_span_ns as f64).min(1.0),
        rules,
        pid,
        comm: ds.comm(pid).to_string(),
        gpu_thread,
        span_ns,
        busy_ns,
        api_ns: (total(&union(
            calls
                .iter()
                .map(|c| (c.ts_ns, c.ts_ns + c.dur_ns))
                .collect(),
            span,
        )) + unplaced)
            .min(busy_ns),
        host_wait_ns: host_wait,
        idle_share: host_wait as f64 / span_ns as f64,
        causes,
        long_gaps: long_gaps.len(),
        long_gaps_ns: long_gaps.iter().map(|(a, b)| b - a).sum(),
        longest_gaps,
        step_period_ns,
        utilization,
        launches,
        sync,
        streams,
        basis,
    })
}

fn rule_checks(
    gaps: usize,
    gaps_ns: i64,
    util: &Utilization,
    sync: &SyncStats,
    launches: &LaunchStats,
) -> Vec<RuleCheck> {
    let check = |rule: &str, triggered: bool, detail: String| RuleCheck {
        rule: rule.to_string(),
        triggered,
        detail,
    };
    vec![
        check(
            "gpu_gaps",
            gaps > 0,
            format!("{gaps} gaps of at least 500 ms with no GPU work, {} ns in all", gaps_ns),
        ),
        check(
            "gpu_time_utilization",
            util.low_chunks > 0,
            format!(
                "{} of {} equal chunks of the lifetime had the GPU busy under 50% of the time",
                util.low_chunks, util.chunks
            ),
        ),
        check(
            "pageable_async_copies",
            sync.pageable_async_copies > 0,
            format!(
                "{} asynchronous copies of at least 1 MiB ran below 8 GB/s (pageable source: they block the host)",
                sync.pageable_async_copies
            ),
        ),
        check(
            "synchronous_operations",
            sync.syncs + sync.sync_copies > 0,
            format!(
                "{} synchronisations and {} synchronous copies/memsets, {} ns blocking the host",
                sync.syncs, sync.sync_copies, sync.time_ns
            ),
        ),
        check(
            "launch_statistics",
            launches.launches_per_sync.is_some_and(|v| v < 5.0),
            format!(
                "{} launches ({:.1}/s), CPU launch time p50 {} ns / p99 {} ns, {} launches per synchronisation",
                launches.launches,
                launches.launches_per_s,
                launches.launch_p50_ns.unwrap_or(0),
                launches.launch_p99_ns.unwrap_or(0),
                launches
                    .launches_per_sync
                    .map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"))
            ),
        ),
    ]
}
