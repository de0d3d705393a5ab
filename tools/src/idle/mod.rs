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

mod bound;
mod calls;
mod gap;
mod gaps;
mod host_wait;
pub mod launches;
mod measure;
pub mod per_step;
mod process;
mod rule_check;
mod split;
mod stream_idle;
mod timeline;
mod utilization;
mod windows;

pub use crate::idle_split::{parts, states};

use crate::intervals;

use crate::activity::op_roles;
use crate::dataset::Dataset;
use crate::gpu_activity::BusySource;
use crate::processes::main_processes;
use bound::HostBound;
pub use gap::{IdleGap, GAP_THRESHOLD_NS};
use gaps::LongGaps;
pub use host_wait::HostWaitCauses;
pub use launches::{LaunchStats, SyncStats};
use measure::Busy;
use process::ProcessSpans;
pub use rule_check::RuleCheck;
use serde::Serialize;
pub use stream_idle::StreamIdle;
pub use utilization::{Utilization, UTILIZATION_CHUNKS, UTILIZATION_LOW};
pub use windows::thread_time_in;

pub use ingero_store::activity::SYNC_WAITED_NS;

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
    /// The code the GPU thread was in during each part of the idle split,
    /// largest part first (empty without stack samples).
    pub code: Vec<crate::code::PartCode>,
    /// What the loop does per step (exact counts over the step period),
    /// when the loop has a period.
    pub per_step: Option<per_step::PerStep>,
    /// The idle time where it happened: `(start, end, idle ns)` pieces, by
    /// time, between the first and the last CUDA call (for findings that
    /// compare stretches of the loop).
    #[serde(skip)]
    #[schemars(skip)]
    pub loop_idle_pieces: Vec<(i64, i64, f64)>,
}

impl ProcessIdle {
    /// GPU idle time inside the loop (the process's first to last CUDA
    /// call), ns: the whole that findings' shares are of. Start-up before
    /// the first call and the tail after the last are reported beside it.
    pub fn loop_idle_ns(&self) -> i64 {
        (self.host_wait_ns - self.causes.before_first_call_ns - self.causes.after_last_call_ns)
            .max(0)
    }

    /// Idle ns inside `[a, b)`, from the loop's idle pieces (a piece cut by
    /// the bounds counts in proportion).
    pub fn loop_idle_in(&self, a: i64, b: i64) -> f64 {
        self.loop_idle_pieces
            .iter()
            .filter(|p| p.1 > a && p.0 < b)
            .map(|&(s, e, v)| {
                let len = (e - s).max(1) as f64;
                v * intervals::overlap((s, e), (a, b)) as f64 / len
            })
            .sum()
    }
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

/// One process's GPU-idle breakdown: its span, busy figure, idle split by
/// cause, gaps and call statistics; `None` when it has no CUDA activity.
fn one(ds: &Dataset, pid: i32, mains: &[i32]) -> Option<ProcessIdle> {
    let p = ProcessSpans::gather(ds, pid)?;
    let mut basis = Vec::new();
    let bound = HostBound::of(ds, &p, &mut basis);
    let gpu_thread = p.gpu_thread(ds);
    let facts = split::thread_facts(ds, &p, gpu_thread, mains);
    let busy = Busy::of(ds, &p, &bound, &mut basis);
    let measured = busy.measured.as_ref();
    let host_wait = (p.span_ns - busy.busy_ns).max(0);
    let step_period_ns = calls::step_period_ns(ds, &p.calls);
    let per_step = per_step::of(ds, pid, (p.first_call, p.last_call_end), step_period_ns);
    let segments = facts.segments();
    let loop_span = (p.first_call, p.last_call_end);
    // Shared out once: the split sums it, the code attribution reads it
    // segment by segment.
    let per_segment = states::attribute_by_segment(&segments, &busy.pieces);
    let causes = split::causes_of(&states::total(&per_segment), host_wait);
    let code = match ds.thread_samples.get(&(pid, gpu_thread)) {
        Some(samples) => {
            crate::code::attribute(&segments, &per_segment, &causes.by_slot(), samples)
        }
        None => Vec::new(),
    };
    split::switch_notes(ds, pid, &facts, &mut basis);
    let long = LongGaps::of(&bound.gaps, measured);
    let utilization = gaps::utilization(p.span, &bound.busy, measured);
    let roles = op_roles(&ds.ops);
    let sampled = crate::dataset::SampledOps::of(ds, pid, p.calls.iter().copied(), |op| {
        ds.op_class(op) == ingero_store::OpClass::Sync
            || roles.get(&op).is_some_and(|r| r.sync_copy)
    });
    let sync = launches::sync_stats(ds, &roles, &p.calls, &sampled);
    let launch_stats = launches::launch_stats(ds, pid, &p.calls, p.span_ns, sync.syncs);
    let rules = launches::rule_checks(
        long.gaps.len(),
        long.total_ns(),
        &utilization,
        &sync,
        &launch_stats,
    );
    let active_span_ns = (p.last_call_end - p.first_call).max(1);
    let active_wait = (host_wait - causes.before_first_call_ns - causes.after_last_call_ns).max(0);
    let api_ns: i64 = p.bursts.iter().map(|s| s.api_ns()).sum::<i64>() + bound.unplaced_ns;
    Some(ProcessIdle {
        pid,
        comm: ds.comm(pid).to_string(),
        gpu_thread,
        span_ns: p.span_ns,
        busy_source: measured.map_or(BusySource::HostBound, |m| m.source),
        busy_is_upper_bound: measured.is_none(),
        busy_ns: busy.busy_ns,
        host_bound_busy_ns: bound.busy_ns,
        gpu: measured.map(|m| m.gpu),
        sampled_ns: busy.sampled_ns,
        others_on_gpu: measured
            .map(|m| m.others_on_gpu.clone())
            .unwrap_or_default(),
        api_ns,
        host_wait_ns: host_wait,
        idle_share: (host_wait as f64 / p.span_ns as f64).clamp(0.0, 1.0),
        active_span_ns,
        active_idle_share: (active_wait as f64 / active_span_ns as f64).clamp(0.0, 1.0),
        causes,
        long_gaps: long.gaps.len(),
        long_gaps_ns: long.total_ns(),
        longest_gaps: long.longest(ds.span.start_ns),
        host_gaps: long.host.len(),
        step_period_ns,
        utilization,
        launches: launch_stats,
        sync,
        streams: calls::streams(&p.calls),
        rules,
        basis,
        code,
        per_step,
        loop_idle_pieces: busy
            .pieces
            .iter()
            .filter(|p| p.1 > p.0 && p.1 > loop_span.0 && p.0 < loop_span.1)
            .map(|&(s, e, v)| {
                let (cs, ce) = (s.max(loop_span.0), e.min(loop_span.1));
                (cs, ce, v * (ce - cs) as f64 / (e - s).max(1) as f64)
            })
            .collect(),
    })
}
