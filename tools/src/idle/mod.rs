//! How idle the GPU was, per process, and what the GPU-driving thread was
//! doing meanwhile: the GPU-idle breakdown that leads every report.
//!
//! **Busy** comes from the driver when the capture holds NVML samples: the
//! process's own SM samples where the driver gives them, else the device's
//! (named as such, with any other process on it). Without samples busy is
//! not known; the host side gives only an upper bound (time inside CUDA
//! calls, or with queued work outstanding until a synchronisation waited
//! for it), so the idle share is then a lower bound and says so.
//!
//! **The breakdown** shares the idle time among the states of the
//! GPU-driving thread in each stretch ([`states`]): before the first call,
//! inside CUDA calls by part (launch, allocation/free, copy, sync, other),
//! between calls, off-CPU by reason, on-CPU outside CUDA, after the last
//! call. It reads the activity spans ([`crate::activity`]) and the thread's
//! context switches, which the recorder keeps exactly whatever `--sample`,
//! so a sampled capture gives the same breakdown and gap list.

mod intervals;
pub mod launches;
pub mod states;
mod timeline;

use crate::activity::{op_roles, ActivityOrigin};
use crate::dataset::{Call, Dataset};
use crate::gpu_activity::{BusySource, MeasuredBusy};
use crate::processes::{main_processes, role_of, Role};
use ingero_store::activity::{ActivityKind, ActivitySpan, CallPart};
use ingero_store::{AggSource, HostKind};
use intervals::{gaps, inside, overlap, total, union};
pub use launches::{LaunchStats, SyncStats};
use serde::Serialize;
use states::{attribute, State, STATES};
use std::collections::BTreeMap;
use timeline::ThreadFacts;

pub use ingero_store::activity::SYNC_WAITED_NS;

/// Idle gaps at least this long are listed (Nsight's "GPU gaps" rule).
pub const GAP_THRESHOLD_NS: i64 = 500_000_000;
/// Chunks the lifetime is cut into for the utilisation rule.
pub const UTILIZATION_CHUNKS: usize = 30;
/// A chunk below this busy share counts as under-utilised.
pub const UTILIZATION_LOW: f64 = 0.5;
/// Page-allocation rate (bytes/s) from which on-CPU host wait is blamed on a storm.
const STORM_RATE: f64 = 256.0 * 1024.0 * 1024.0;

/// Where GPU-idle time went, ns: what the GPU-driving thread was doing
/// while the GPU had no work from this process. The parts add up to the
/// idle time (`host_wait_ns`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct HostWaitCauses {
    /// Before the process's first CUDA call (start-up, imports, data loading).
    pub before_first_call_ns: i64,
    /// Thread inside kernel or graph launch calls (launch-bound: the GPU
    /// finishes each kernel before the next is queued).
    pub in_launch_calls_ns: i64,
    /// Thread inside allocation or free calls (host time, not GPU work).
    pub in_alloc_free_ns: i64,
    /// Thread inside copies or memsets.
    pub in_copies_ns: i64,
    /// Thread inside synchronisations while the GPU was idle.
    pub in_sync_ns: i64,
    /// Thread inside other CUDA calls (events, queries, setup).
    pub in_other_cuda_ns: i64,
    /// Host time between CUDA calls less than 1 ms apart.
    pub between_calls_ns: i64,
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
    /// GPU thread on-CPU outside CUDA otherwise (Python-side work: input
    /// preparation, compilation, anything not in a CUDA call).
    pub host_compute_ns: i64,
    /// After the process's last recorded CUDA call.
    pub after_last_call_ns: i64,
}

impl HostWaitCauses {
    fn from_shares(s: &[f64; STATES]) -> HostWaitCauses {
        let at = |st: State| s[st.index()].round() as i64;
        HostWaitCauses {
            before_first_call_ns: at(State::BeforeFirst),
            in_launch_calls_ns: at(State::Inside(CallPart::Launch)),
            in_alloc_free_ns: at(State::Inside(CallPart::AllocFree)),
            in_copies_ns: at(State::Inside(CallPart::Copy)),
            in_sync_ns: at(State::Inside(CallPart::Sync)),
            in_other_cuda_ns: at(State::Inside(CallPart::Other)),
            between_calls_ns: at(State::BetweenCalls),
            off_cpu_preempted_ns: at(State::OffPreempted),
            waiting_on_workers_ns: at(State::OffWorkers),
            off_cpu_blocked_ns: at(State::OffBlocked),
            off_cpu_unknown_ns: at(State::OffUnknown),
            page_alloc_storm_ns: at(State::Storm),
            host_compute_ns: at(State::Compute),
            after_last_call_ns: at(State::AfterLast),
        }
    }

    /// Every part with its label, in report order.
    pub fn labelled(&self) -> [(&'static str, i64); 14] {
        [
            ("before the first CUDA call", self.before_first_call_ns),
            ("inside kernel/graph launch calls", self.in_launch_calls_ns),
            ("inside allocation/free calls", self.in_alloc_free_ns),
            ("inside copies/memsets", self.in_copies_ns),
            ("inside synchronisations", self.in_sync_ns),
            ("inside other CUDA calls", self.in_other_cuda_ns),
            ("between CUDA calls (< 1 ms apart)", self.between_calls_ns),
            ("on-CPU outside CUDA", self.host_compute_ns),
            (
                "on-CPU during page-allocation storms",
                self.page_alloc_storm_ns,
            ),
            ("off-CPU: preempted (run queue)", self.off_cpu_preempted_ns),
            (
                "off-CPU: waiting on DataLoader workers",
                self.waiting_on_workers_ns,
            ),
            (
                "off-CPU: blocked (I/O, locks, sleep)",
                self.off_cpu_blocked_ns,
            ),
            ("off-CPU: reason not recorded", self.off_cpu_unknown_ns),
            ("after the last CUDA call", self.after_last_call_ns),
        ]
    }

    /// Sum of the parts.
    pub fn sum(&self) -> i64 {
        self.labelled().iter().map(|(_, v)| v).sum()
    }

    /// Off-CPU parts together.
    pub fn off_cpu_ns(&self) -> i64 {
        self.off_cpu_preempted_ns
            + self.waiting_on_workers_ns
            + self.off_cpu_blocked_ns
            + self.off_cpu_unknown_ns
    }

    fn largest_mut(&mut self) -> &mut i64 {
        let parts = [
            &mut self.before_first_call_ns,
            &mut self.in_launch_calls_ns,
            &mut self.in_alloc_free_ns,
            &mut self.in_copies_ns,
            &mut self.in_sync_ns,
            &mut self.in_other_cuda_ns,
            &mut self.between_calls_ns,
            &mut self.off_cpu_preempted_ns,
            &mut self.waiting_on_workers_ns,
            &mut self.off_cpu_blocked_ns,
            &mut self.off_cpu_unknown_ns,
            &mut self.page_alloc_storm_ns,
            &mut self.host_compute_ns,
            &mut self.after_last_call_ns,
        ];
        parts
            .into_iter()
            .max_by_key(|v| **v)
            .expect("fourteen parts")
    }
}

/// One idle gap.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IdleGap {
    /// Start, seconds after the capture began.
    pub start_offset_s: f64,
    /// Length, ns.
    pub dur_ns: i64,
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
    /// What busy means here: "NVML samples" or "host-side upper bound".
    pub basis: String,
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

/// CUDA calls of one stream (raw rows, outer calls).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StreamIdle {
    /// Stream handle (0 = default or unknown).
    pub stream: i64,
    /// Raw rows of outer calls on it.
    pub calls: i64,
    /// Time inside those calls, ns.
    pub api_ns: i64,
}

/// Idle breakdown of one GPU-driving process.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessIdle {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// The thread that spent most time inside CUDA calls.
    pub gpu_thread: i32,
    /// Idle share of the process's whole lifetime in the window
    /// (host_wait / span): the figure to lead with (a lower bound when
    /// `busy_is_upper_bound`).
    pub idle_share: f64,
    /// Lifetime of the process within the window, ns.
    pub span_ns: i64,
    /// GPU without work from this process (span - busy), ns.
    pub host_wait_ns: i64,
    /// What the GPU thread was doing while the GPU idled.
    pub causes: HostWaitCauses,
    /// GPU busy for this process, ns: measured by NVML, or the host-side
    /// upper bound where the capture has no samples.
    pub busy_ns: i64,
    /// Where `busy_ns` comes from.
    pub busy_source: BusySource,
    /// True when `busy_ns` is an upper bound (no GPU samples), not a measurement.
    pub busy_is_upper_bound: bool,
    /// Idle share between the first and the last CUDA call only
    /// (host_wait within `active_span_ns`): start-up before the first call
    /// and the tail after the last one left out; not the lifetime share.
    pub active_idle_share: f64,
    /// From the first CUDA call to the end of the last one, ns.
    pub active_span_ns: i64,
    /// Idle gaps of at least 500 ms (NVML periods at 0% where sampled, else
    /// stretches with no CUDA activity of the process).
    pub long_gaps: usize,
    /// Their total, ns.
    pub long_gaps_ns: i64,
    /// Median time between successive synchronisations (one training step when
    /// the loop syncs once per step), ns.
    pub step_period_ns: Option<i64>,
    /// Time inside outer CUDA calls, summed over the process's threads, ns.
    pub api_ns: i64,
    /// The host-side upper bound on busy (inside CUDA calls or with queued
    /// work outstanding), ns, whatever the source of `busy_ns`.
    pub host_bound_busy_ns: i64,
    /// GPU the samples belong to.
    pub gpu: Option<u32>,
    /// Part of the lifetime the GPU samples cover, ns (0 without samples).
    pub sampled_ns: i64,
    /// Other processes that kept the same GPU busy, when device samples
    /// (which count them too) stand in for per-process ones.
    pub others_on_gpu: Vec<i32>,
    /// The longest of them.
    pub longest_gaps: Vec<IdleGap>,
    /// Stretches of at least 500 ms with no CUDA call and no queued work of
    /// the process (exact, whatever the sampling).
    pub host_gaps: usize,
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

/// The thread of `pid` with most time inside CUDA calls, from the activity
/// spans (raw rows where there are none).
fn gpu_thread_of(spans: &[&ActivitySpan], ds: &Dataset, pid: i32) -> i32 {
    let mut per_tid: BTreeMap<i32, i64> = BTreeMap::new();
    for s in spans.iter().filter(|s| s.kind == ActivityKind::Burst) {
        *per_tid.entry(s.tid).or_default() += s.api_ns();
    }
    per_tid
        .into_iter()
        .max_by_key(|(tid, t)| (*t, -tid))
        .map(|(tid, _)| tid)
        .or_else(|| ds.gpu_thread(pid))
        .unwrap_or(pid)
}

fn zero_runs(m: &MeasuredBusy) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    for p in m.periods.iter().filter(|p| p.busy <= 0.0) {
        match out.last_mut() {
            Some(last) if p.start_ns <= last.1 => last.1 = last.1.max(p.end_ns),
            _ => out.push((p.start_ns, p.end_ns)),
        }
    }
    out
}

fn one(ds: &Dataset, pid: i32, mains: &[i32]) -> Option<ProcessIdle> {
    let calls: Vec<&Call> = ds.calls.iter().filter(|c| c.pid == pid).collect();
    let spans: Vec<&ActivitySpan> = ds.activity.iter().filter(|s| s.pid == pid).collect();
    let agg = ds.totals(AggSource::Cuda, None, Some(pid));
    if calls.is_empty() && spans.is_empty() && agg.count == 0 {
        return None;
    }
    let win = (ds.window.lo_ns, ds.window.hi_ns);
    let bursts: Vec<&ActivitySpan> = spans
        .iter()
        .copied()
        .filter(|s| s.kind == ActivityKind::Burst)
        .collect();
    let first_call = bursts
        .iter()
        .map(|s| s.start_ns)
        .min()
        .or_else(|| calls.first().map(|c| c.ts_ns));
    let last_call_end = bursts
        .iter()
        .map(|s| s.end_ns)
        .max()
        .or_else(|| calls.iter().map(|c| c.ts_ns + c.dur_ns).max());
    let proc_info = ds.processes.get(&pid);
    let lo = proc_info
        .map_or(win.0, |p| p.first_seen_ns)
        .max(win.0)
        .max(ds.span.start_ns);
    let hi = proc_info
        .map_or(win.1, |p| p.last_seen_ns.max(p.first_seen_ns))
        .min(win.1)
        .max(last_call_end.unwrap_or(lo).min(win.1));
    let span = (lo, hi.max(lo + 1));
    let span_ns = span.1 - span.0;
    let first_call = first_call.unwrap_or(span.1).clamp(span.0, span.1);
    let last_call_end = last_call_end.unwrap_or(span.0).clamp(span.0, span.1);

    let mut basis = Vec::new();
    let bound_iv = union(spans.iter().map(|s| (s.start_ns, s.end_ns)).collect(), span);
    let sampled_away = agg.count > agg.stored;
    // Calls the recorder counted but did not keep cannot be placed in time
    // when the spans come from raw rows: count their time as busy anyway.
    let unplaced = if ds.activity_origin == ActivityOrigin::FromRawRows && sampled_away {
        let raw_api: i64 = calls.iter().filter(|c| !c.nested).map(|c| c.dur_ns).sum();
        let outer: i64 = ds
            .aggs
            .iter()
            .filter(|a| a.source == AggSource::Cuda && a.pid == pid)
            .map(|a| a.outer_dur_ns())
            .sum();
        let extra = (outer - raw_api).max(0);
        basis.push(format!(
            "{} calls were counted but not kept as raw rows and this file has no recorded activity spans: their {} ns inside CUDA count as busy but cannot be placed in time, and gaps are upper bounds",
            agg.count - agg.stored,
            extra
        ));
        extra
    } else {
        0
    };
    if ds.activity_origin == ActivityOrigin::Recorded {
        basis.push(
            "activity spans recorded from every CUDA call (exact whatever the raw-row sampling)"
                .to_string(),
        );
    }
    let host_bound_busy_ns = (total(&bound_iv) + unplaced).min(span_ns);
    let bound_gaps = gaps(&bound_iv, span);

    let gpu_thread = gpu_thread_of(&spans, ds, pid);
    let workers: Vec<(i64, i64)> = ds
        .processes
        .values()
        .filter(|p| {
            matches!(role_of(ds, p.pid, mains, &[pid]).0, Role::DataloaderWorker)
                && ds.descends_from(p.pid, pid)
        })
        .map(|p| (p.first_seen_ns, p.last_seen_ns))
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
    let facts = ThreadFacts {
        span,
        first_call,
        last_call_end,
        bursts: bursts
            .iter()
            .copied()
            .filter(|s| s.tid == gpu_thread)
            .collect(),
        switches: ds
            .gpu_thread_switches
            .iter()
            .filter(|h| h.pid == pid && h.tid == gpu_thread)
            .collect(),
        workers,
        storm_buckets,
        bucket_ns: ds.bucket_ns,
    };
    let segments = facts.segments();

    let measured = ds.gpu.measured_busy(pid, span);
    let mut pieces: Vec<(i64, i64, f64)> = Vec::new();
    let busy_ns;
    let mut sampled_ns = 0;
    if let Some(m) = &measured {
        let covered = union(
            m.periods.iter().map(|p| (p.start_ns, p.end_ns)).collect(),
            span,
        );
        sampled_ns = total(&covered);
        let uncovered = gaps(&covered, span);
        let mut b = m.busy_ns;
        for p in &m.periods {
            let idle = (p.end_ns - p.start_ns) as f64 * (1.0 - p.busy);
            pieces.extend(intervals::split_idle(
                &bound_iv,
                (p.start_ns, p.end_ns),
                idle,
            ));
        }
        for &(a, z) in &uncovered {
            b += inside(&bound_iv, (a, z));
            for &(ga, gz) in &bound_gaps {
                let (x, y) = (ga.max(a), gz.min(z));
                if y > x {
                    pieces.push((x, y, (y - x) as f64));
                }
            }
        }
        pieces.sort_by_key(|p| p.0);
        busy_ns = b.min(span_ns);
        let what = match m.source {
            BusySource::NvmlProcess => format!("NVML per-process SM samples of pid {pid}"),
            _ => format!("NVML device SM samples of GPU {}", m.gpu),
        };
        basis.push(format!(
            "GPU busy measured by the driver: {what}, {} periods covering {} of {} ns of the lifetime{}",
            m.periods.len(),
            sampled_ns,
            span_ns,
            if sampled_ns < span_ns {
                " (the rest: host-side upper bound)"
            } else {
                ""
            }
        ));
        if !m.others_on_gpu.is_empty() {
            basis.push(format!(
                "device samples also count other processes busy on GPU {}: {:?}",
                m.gpu, m.others_on_gpu
            ));
        }
        basis.push(
            "idle time in each sample period goes first to the stretches where no work was queued (the GPU cannot be busy there), the rest to the stretches with queued work; within each, it is shared among what the GPU thread was doing, in proportion to time, time inside synchronisations last"
                .to_string(),
        );
    } else {
        busy_ns = host_bound_busy_ns;
        pieces = bound_gaps
            .iter()
            .map(|&(a, z)| (a, z, (z - a) as f64))
            .collect();
        basis.push(
            "no GPU utilisation samples in this capture: GPU busy is unknown; busy here is a host-side upper bound (inside CUDA calls, or with queued work outstanding until a synchronisation waited for it), so the idle share is a lower bound"
                .to_string(),
        );
    }
    let host_wait = (span_ns - busy_ns).max(0);
    let mut causes = HostWaitCauses::from_shares(&attribute(&segments, &pieces));
    // Calls counted but not placed ran while the thread was on the CPU:
    // their time leaves the on-CPU parts first.
    let mut surplus = causes.sum() - host_wait;
    for part in [
        &mut causes.host_compute_ns,
        &mut causes.page_alloc_storm_ns,
        &mut causes.after_last_call_ns,
    ] {
        let take = surplus.clamp(0, *part);
        *part -= take;
        surplus -= take;
    }
    // What is left is rounding (or a deficit): the largest part absorbs it.
    *causes.largest_mut() -= surplus;

    if facts.switches.iter().all(|h| h.arg < 0) && !facts.switches.is_empty() {
        basis.push("the recorder did not mark which context switches were preemptions".to_string());
    }
    let pid_sw = ds.host_totals(HostKind::SchedSwitch, Some(pid));
    if pid_sw.count > pid_sw.stored && ds.activity_origin == ActivityOrigin::FromRawRows {
        basis.push(
            "some context switches of this process were not kept as raw rows: off-CPU parts are lower bounds"
                .to_string(),
        );
    }

    // Gaps: measured zero-busy runs where sampled, else host gaps.
    let host_long: Vec<(i64, i64)> = bound_gaps
        .iter()
        .copied()
        .filter(|(a, b)| b - a >= GAP_THRESHOLD_NS)
        .collect();
    let mut long_gaps: Vec<(i64, i64)> = match &measured {
        Some(m) => zero_runs(m)
            .into_iter()
            .filter(|(a, b)| b - a >= GAP_THRESHOLD_NS)
            .collect(),
        None => host_long.clone(),
    };
    long_gaps.sort_by_key(|g| std::cmp::Reverse(g.1 - g.0));
    let longest_gaps = long_gaps
        .iter()
        .take(5)
        .map(|(a, b)| IdleGap {
            start_offset_s: (a - ds.span.start_ns) as f64 / 1e9,
            dur_ns: b - a,
        })
        .collect();

    let utilization = utilization(span, &bound_iv, measured.as_ref());

    let roles = op_roles(&ds.ops);
    let sync = launches::sync_stats(ds, &roles, &calls);
    let launch_stats = launches::launch_stats(ds, pid, &calls, span_ns, sync.syncs);
    let step_period_ns = {
        let sync_ts: Vec<i64> = calls
            .iter()
            .filter(|c| !c.nested && ds.op_class(c.op_id) == ingero_store::OpClass::Sync)
            .map(|c| c.ts_ns)
            .collect();
        let mut d: Vec<i64> = sync_ts.windows(2).map(|w| w[1] - w[0]).collect();
        crate::percentile::p50_p95_p99(&mut d).0
    };
    let mut by_stream: BTreeMap<i64, (i64, i64)> = BTreeMap::new();
    for c in calls.iter().filter(|c| !c.nested) {
        let e = by_stream.entry(c.stream_key()).or_default();
        e.0 += 1;
        e.1 += c.dur_ns;
    }
    let streams = by_stream
        .into_iter()
        .map(|(stream, (n, api))| StreamIdle {
            stream,
            calls: n,
            api_ns: api,
        })
        .collect();
    let rules = launches::rule_checks(
        long_gaps.len(),
        long_gaps.iter().map(|(a, b)| b - a).sum(),
        &utilization,
        &sync,
        &launch_stats,
    );
    let active_span_ns = (last_call_end - first_call).max(1);
    let active_wait = (host_wait - causes.before_first_call_ns - causes.after_last_call_ns).max(0);
    let api_ns: i64 = bursts.iter().map(|s| s.api_ns()).sum::<i64>() + unplaced;
    Some(ProcessIdle {
        pid,
        comm: ds.comm(pid).to_string(),
        gpu_thread,
        span_ns,
        busy_source: measured
            .as_ref()
            .map_or(BusySource::HostBound, |m| m.source),
        busy_is_upper_bound: measured.is_none(),
        busy_ns,
        host_bound_busy_ns,
        gpu: measured.as_ref().map(|m| m.gpu),
        sampled_ns,
        others_on_gpu: measured
            .as_ref()
            .map(|m| m.others_on_gpu.clone())
            .unwrap_or_default(),
        api_ns,
        host_wait_ns: host_wait,
        idle_share: (host_wait as f64 / span_ns as f64).clamp(0.0, 1.0),
        active_span_ns,
        active_idle_share: (active_wait as f64 / active_span_ns as f64).clamp(0.0, 1.0),
        causes,
        long_gaps: long_gaps.len(),
        long_gaps_ns: long_gaps.iter().map(|(a, b)| b - a).sum(),
        longest_gaps,
        host_gaps: host_long.len(),
        step_period_ns,
        utilization,
        launches: launch_stats,
        sync,
        streams,
        rules,
        basis,
    })
}

/// Busy share over equal chunks of the span, from the samples where they
/// cover a chunk and from the host-side bound elsewhere.
fn utilization(span: (i64, i64), bound: &[(i64, i64)], m: Option<&MeasuredBusy>) -> Utilization {
    let n = UTILIZATION_CHUNKS;
    let width = ((span.1 - span.0) / n as i64).max(1);
    let mut busy_share = Vec::with_capacity(n);
    let covered: Vec<(i64, i64)> = m.map_or_else(Vec::new, |m| {
        union(
            m.periods.iter().map(|p| (p.start_ns, p.end_ns)).collect(),
            span,
        )
    });
    for i in 0..n as i64 {
        let c = (span.0 + i * width, span.0 + (i + 1) * width);
        let mut b = 0.0;
        if let Some(m) = m {
            for p in &m.periods {
                b += overlap((p.start_ns, p.end_ns), c) as f64 * p.busy;
            }
            for (a, z) in gaps(&covered, c) {
                b += inside(bound, (a, z)) as f64;
            }
        } else {
            b = inside(bound, c) as f64;
        }
        busy_share.push((b / width as f64).clamp(0.0, 1.0));
    }
    Utilization {
        chunks: n,
        low_chunks: busy_share.iter().filter(|b| **b < UTILIZATION_LOW).count(),
        busy_share,
        basis: if m.is_some() {
            "NVML samples".to_string()
        } else {
            "host-side upper bound".to_string()
        },
    }
}
