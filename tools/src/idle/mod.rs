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
mod gaps;
pub mod launches;
mod measure;
pub mod per_step;
mod process;
mod split;
mod timeline;
mod windows;

pub use crate::idle_split::{parts, states};

use crate::intervals;

use crate::activity::op_roles;
use crate::dataset::Dataset;
use crate::gpu_activity::BusySource;
use crate::idle_split::states::{State, STATES};
use crate::processes::main_processes;
use bound::HostBound;
use gaps::LongGaps;
pub use launches::{LaunchStats, SyncStats};
use measure::Busy;
use process::ProcessSpans;
use serde::Serialize;
pub use windows::thread_time_in;

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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
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
        let mut out = HostWaitCauses::default();
        for p in parts::PARTS {
            *out.at_mut(p.state) = s[p.state.index()].round() as i64;
        }
        out
    }

    /// The part of one thread state, ns.
    pub fn at(&self, state: State) -> i64 {
        let mut copy = *self;
        *copy.at_mut(state)
    }

    fn at_mut(&mut self, state: State) -> &mut i64 {
        use ingero_store::activity::CallPart;
        match state {
            State::BeforeFirst => &mut self.before_first_call_ns,
            State::AfterLast => &mut self.after_last_call_ns,
            State::Inside(CallPart::Launch) => &mut self.in_launch_calls_ns,
            State::Inside(CallPart::AllocFree) => &mut self.in_alloc_free_ns,
            State::Inside(CallPart::Copy) => &mut self.in_copies_ns,
            State::Inside(CallPart::Sync) => &mut self.in_sync_ns,
            State::Inside(CallPart::Other) => &mut self.in_other_cuda_ns,
            State::BetweenCalls => &mut self.between_calls_ns,
            State::OffPreempted => &mut self.off_cpu_preempted_ns,
            State::OffWorkers => &mut self.waiting_on_workers_ns,
            State::OffBlocked => &mut self.off_cpu_blocked_ns,
            State::OffUnknown => &mut self.off_cpu_unknown_ns,
            State::Storm => &mut self.page_alloc_storm_ns,
            State::Compute => &mut self.host_compute_ns,
        }
    }

    /// Every part with its label, in report order ([`parts::PARTS`]).
    pub fn labelled(&self) -> [(&'static str, i64); STATES] {
        parts::PARTS.map(|p| (p.label, self.at(p.state)))
    }

    /// The parts by state slot ([`states::State::index`]).
    pub fn by_slot(&self) -> [i64; STATES] {
        let mut out = [0i64; STATES];
        for p in parts::PARTS {
            out[p.state.index()] = self.at(p.state);
        }
        out
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
        let largest = parts::PARTS
            .iter()
            .max_by_key(|p| self.at(p.state))
            .map_or(State::BeforeFirst, |p| p.state);
        self.at_mut(largest)
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
    let sync = launches::sync_stats(ds, &roles, &p.calls);
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
