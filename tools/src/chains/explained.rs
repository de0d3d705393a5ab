//! How much of the GPU's idle time each finding accounts for, without
//! counting any stretch twice.
//!
//! The busy model splits the main process's GPU-idle time by what its GPU
//! thread was doing (parts of [`HostWaitCauses`]). Each mechanism names the
//! parts its evidence covers (a launch-bound loop: time inside launch calls
//! and between them; CPU contention: preempted time) and, where it measured
//! its own loss (slow calls' excess time, one long block), a cap. Findings
//! take from those parts in turn, largest claim first, so two findings
//! never explain the same nanoseconds; what no finding takes is reported
//! as unexplained, by part.

use super::{CausalChain, Cause, Severity};
use crate::format;
use crate::idle::{HostWaitCauses, ProcessIdle};

/// Slots of [`HostWaitCauses::labelled`], by name.
mod slot {
    pub const LAUNCH: usize = 1;
    pub const ALLOC_FREE: usize = 2;
    pub const COPIES: usize = 3;
    pub const SYNC: usize = 4;
    pub const OTHER_CUDA: usize = 5;
    pub const BETWEEN: usize = 6;
    pub const COMPUTE: usize = 7;
    pub const STORM: usize = 8;
    pub const PREEMPTED: usize = 9;
    pub const WORKERS: usize = 10;
    pub const BLOCKED: usize = 11;
    pub const UNKNOWN: usize = 12;
}

/// The idle parts a mechanism's evidence covers.
pub fn claims(cause: Cause) -> &'static [usize] {
    use slot::*;
    match cause {
        Cause::HostInputPipeline | Cause::HostCompute => &[COMPUTE, STORM],
        Cause::DataloaderWorkerContention => &[PREEMPTED, WORKERS],
        Cause::SlowWorkers => &[WORKERS],
        Cause::CpuContention => &[PREEMPTED],
        Cause::PageAllocStorm => &[STORM],
        Cause::WorkerForkStorm => &[LAUNCH, ALLOC_FREE, OTHER_CUDA],
        Cause::MemoryPressure => &[BLOCKED, UNKNOWN],
        Cause::PageableMemcpy => &[COPIES],
        Cause::AllocationSpike | Cause::AllocatorChurn => &[ALLOC_FREE],
        Cause::ColdStart => &[LAUNCH, ALLOC_FREE, OTHER_CUDA],
        Cause::LaunchBound => &[LAUNCH, BETWEEN],
        Cause::SyncInLoop => &[LAUNCH, BETWEEN, COMPUTE, SYNC],
        Cause::LongBlock => &[BLOCKED, UNKNOWN, WORKERS],
        Cause::GilContention
        | Cause::BlockingIo
        | Cause::HostSleep
        | Cause::WaitingForWork
        | Cause::LockWait => &[BLOCKED, UNKNOWN],
        Cause::CompileStall => &[COMPUTE, BLOCKED, UNKNOWN, STORM],
        Cause::GpuBound => &[],
    }
}

/// The value of the evidence item `label` of `c`, ns.
fn evidence_ns(c: &CausalChain, label: &str) -> Option<i64> {
    c.evidence
        .iter()
        .find(|e| e.label == label)
        .map(|e| e.value as i64)
}

/// A finding's own measure of its loss, where it has one (ns).
fn cap(c: &CausalChain) -> Option<i64> {
    let named = |l: &str| evidence_ns(c, l);
    match c.cause {
        Cause::ColdStart => named("cold_excess_time"),
        Cause::WorkerForkStorm | Cause::AllocationSpike => named("excess_time"),
        Cause::LongBlock => named("longest_block"),
        Cause::CompileStall => named("compile_time"),
        Cause::HostCompute => named("host_compute"),
        Cause::GilContention
        | Cause::BlockingIo
        | Cause::HostSleep
        | Cause::WaitingForWork
        | Cause::LockWait => named("blocked_time"),
        _ => None,
    }
}

/// Sets `explained_ns`/`explained_share` of every chain from the idle
/// breakdown of `idle` (the main process), ranks chains by it, derives
/// severity from the share, and returns the unexplained remainder note.
pub fn apportion(chains: &mut [CausalChain], idle: Option<&ProcessIdle>) -> Option<String> {
    let idle = idle?;
    let whole = idle.host_wait_ns.max(0);
    let mut pool: Vec<i64> = idle.causes.labelled().iter().map(|(_, v)| *v).collect();
    // Mechanisms with one dedicated part first (a page-allocation storm owns
    // the on-CPU time during storms before a general on-CPU finding takes
    // it), then larger claims first: what each could take from the pool.
    let mut order: Vec<usize> = (0..chains.len()).collect();
    let potential = |c: &CausalChain| -> i64 {
        let sum: i64 = claims(c.cause).iter().map(|&s| pool[s]).sum();
        cap(c).map_or(sum, |k| k.min(sum))
    };
    let pots: Vec<i64> = chains.iter().map(potential).collect();
    // The on-CPU finding with no mechanism named takes only what the
    // identified mechanisms leave.
    order.sort_by_key(|&i| {
        (
            chains[i].cause == Cause::HostCompute,
            claims(chains[i].cause).len() != 1,
            std::cmp::Reverse(pots[i]),
        )
    });
    for i in order {
        let c = &mut chains[i];
        if c.cause == Cause::GpuBound {
            c.explained_ns = 0;
            c.explained_share = 0.0;
            continue;
        }
        let mut want = cap(c).unwrap_or(i64::MAX);
        let mut got = 0;
        for &s in claims(c.cause) {
            let take = pool[s].min(want);
            pool[s] -= take;
            want -= take;
            got += take;
        }
        c.explained_ns = got;
        c.explained_share = if whole > 0 {
            got as f64 / whole as f64
        } else {
            0.0
        };
    }
    for c in chains.iter_mut() {
        c.severity = severity(c, idle);
    }
    chains.sort_by(|a, b| {
        let by_time = if tier(a) == 0 && tier(b) == 0 {
            std::cmp::Ordering::Equal
        } else {
            rank_key(b, idle).total_cmp(&rank_key(a, idle))
        };
        tier(b)
            .cmp(&tier(a))
            .then(by_time)
            .then(b.score.total_cmp(&a.score))
    });
    let explained: i64 = chains.iter().map(|c| c.explained_ns).sum();
    let rest = (whole - explained).max(0);
    if whole <= 0 || rest == 0 {
        return None;
    }
    let labels = HostWaitCauses::default().labelled();
    let mut parts: Vec<(usize, i64)> = pool
        .iter()
        .copied()
        .enumerate()
        .filter(|p| p.1 > 0)
        .collect();
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let listed: Vec<String> = parts
        .iter()
        .take(3)
        .map(|&(s, v)| format!("{} {}", labels[s].0, format::ns(v)))
        .collect();
    Some(format!(
        "{} of the {} of GPU idle time of pid {} ({}) is explained by no finding: {}.",
        format::ns(rest),
        format::ns(whole),
        idle.pid,
        format::pct(rest as f64 / whole as f64),
        listed.join(", ")
    ))
}

/// Time of the GPU thread's loop a mechanism accounts for beyond GPU idle
/// time: allocation churn costs the step its time inside the allocator even
/// where NVML counts the device busy meanwhile.
/// So do pageable copies: the copy calls take longer than pinned copies
/// would, whether the busy bound counts them as GPU work or not.
fn step_time(c: &CausalChain) -> i64 {
    let named = |l: &str| evidence_ns(c, l).unwrap_or(0);
    match c.cause {
        Cause::AllocatorChurn => named("alloc_free_time"),
        Cause::PageableMemcpy => named("excess_over_pinned"),
        _ => 0,
    }
}

/// Share of the GPU idle time below which a finding's explained time is
/// not a ranking figure: its parts could not be told apart in this file
/// (e.g. off-CPU time with no preemption flag), so its evidence score ranks it.
const ATTRIBUTED_MIN: f64 = 0.01;

/// Ranking tier: a host-side finding that explains at least 40% of the
/// GPU's idle time (or costs the loop more than a quarter of its life)
/// comes before a GPU-bound verdict, which comes before findings with
/// attributed time, which come before those whose time this file cannot
/// attribute (ranked by evidence score).
fn tier(c: &CausalChain) -> u8 {
    if c.cause == Cause::GpuBound {
        2
    } else if c.explained_share >= 0.4 || c.severity == Severity::High {
        3
    } else if c.explained_share >= ATTRIBUTED_MIN || step_time(c) > 0 {
        1
    } else {
        0
    }
}

/// Ranking: explained time (idle, or of the step); a GPU-bound run ranks by
/// its busy time.
fn rank_key(c: &CausalChain, idle: &ProcessIdle) -> f64 {
    if c.cause == Cause::GpuBound {
        idle.busy_ns as f64
    } else {
        c.explained_ns.max(step_time(c)) as f64
    }
}

/// Severity from the share of the process's lifetime the finding explains
/// (a GPU-bound finding: from the busy share).
fn severity(c: &CausalChain, idle: &ProcessIdle) -> Severity {
    let share = if c.cause == Cause::GpuBound {
        1.0 - idle.idle_share
    } else {
        c.explained_ns.max(step_time(c)) as f64 / idle.span_ns.max(1) as f64
    };
    if share >= 0.25 {
        Severity::High
    } else if share >= 0.05 {
        Severity::Medium
    } else {
        Severity::Low
    }
}
