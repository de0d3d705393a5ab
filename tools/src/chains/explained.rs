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

use crate::finding::{CausalChain, Cause, Severity};
use crate::format;
use crate::idle::{HostWaitCauses, ProcessIdle};
use crate::idle_split::parts::position;
use crate::idle_split::states::State;

/// The thread states of the idle split, by short name.
mod slot {
    use crate::idle_split::states::State;
    use ingero_store::activity::CallPart;
    pub const LAUNCH: State = State::Inside(CallPart::Launch);
    pub const ALLOC_FREE: State = State::Inside(CallPart::AllocFree);
    pub const COPIES: State = State::Inside(CallPart::Copy);
    pub const SYNC: State = State::Inside(CallPart::Sync);
    pub const OTHER_CUDA: State = State::Inside(CallPart::Other);
    pub const BETWEEN: State = State::BetweenCalls;
    pub const COMPUTE: State = State::Compute;
    pub const STORM: State = State::Storm;
    pub const PREEMPTED: State = State::OffPreempted;
    pub const WORKERS: State = State::OffWorkers;
    pub const BLOCKED: State = State::OffBlocked;
    pub const UNKNOWN: State = State::OffUnknown;
}

/// The idle parts a mechanism's evidence covers.
pub fn claims(cause: Cause) -> &'static [State] {
    use slot::*;
    match cause {
        Cause::HostInputPipeline | Cause::HostCompute => &[COMPUTE, STORM],
        // Capped by the contention's own measure (preempted time, slowed
        // calls, idle beyond the unsaturated rate), taken where it fell.
        Cause::DataloaderWorkerContention => &[
            PREEMPTED, WORKERS, LAUNCH, SYNC, OTHER_CUDA, ALLOC_FREE, COPIES, BETWEEN, COMPUTE,
        ],
        Cause::SlowWorkers => &[WORKERS],
        Cause::CpuContention => &[
            PREEMPTED, LAUNCH, SYNC, OTHER_CUDA, ALLOC_FREE, COPIES, BETWEEN, COMPUTE,
        ],
        Cause::PageAllocStorm => &[STORM],
        Cause::WorkerForkStorm => &[LAUNCH, ALLOC_FREE, OTHER_CUDA],
        Cause::MemoryPressure => &[BLOCKED, UNKNOWN],
        Cause::PageableMemcpy => &[COPIES],
        Cause::AllocationSpike | Cause::AllocatorChurn => &[ALLOC_FREE],
        Cause::ColdStart => &[LAUNCH, ALLOC_FREE, OTHER_CUDA],
        Cause::LaunchBound => &[LAUNCH, BETWEEN],
        // The wait itself (inside the synchronisation, or inside the small
        // copy back that blocks like one), then the refill after it.
        Cause::SyncInLoop => &[SYNC, COPIES, BETWEEN, COMPUTE, LAUNCH],
        Cause::LongBlock => &[BLOCKED, UNKNOWN, WORKERS],
        Cause::GilContention
        | Cause::BlockingIo
        | Cause::HostSleep
        | Cause::WaitingForWork
        | Cause::LockWait => &[BLOCKED, UNKNOWN],
        Cause::CompileStall => &[COMPUTE, BLOCKED, UNKNOWN, STORM],
        Cause::GpuBound | Cause::IdleCode => &[],
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
        Cause::PageAllocStorm => named("fault_path_time"),
        Cause::CpuContention => named("contention_time"),
        Cause::DataloaderWorkerContention => named("contention_time"),
        Cause::HostCompute => named("host_compute"),
        Cause::SyncInLoop => named("sync_refill_idle"),
        Cause::GilContention
        | Cause::BlockingIo
        | Cause::HostSleep
        | Cause::WaitingForWork
        | Cause::LockWait => named("blocked_time"),
        _ => None,
    }
}

/// Sets `explained_ns`/`explained_share` of every chain from the idle
/// breakdown of `idle` (the main process) and returns what no chain took,
/// by part (the slots of [`HostWaitCauses::labelled`]). Shares are of the
/// loop's idle time ([`ProcessIdle::loop_idle_ns`]): no mechanism claims
/// start-up or the tail after the last call.
pub fn claim(chains: &mut [CausalChain], idle: &ProcessIdle) -> Vec<i64> {
    let whole = idle.loop_idle_ns();
    let mut pool: Vec<i64> = idle.causes.labelled().iter().map(|(_, v)| *v).collect();
    // Start-up and the tail lie outside the loop: reported beside it.
    pool[position(State::BeforeFirst)] = 0;
    pool[position(State::AfterLast)] = 0;
    // Mechanisms with one dedicated part first (a page-allocation storm owns
    // the on-CPU time during storms before a general on-CPU finding takes
    // it), then larger claims first: what each could take from the pool.
    let mut order: Vec<usize> = (0..chains.len()).collect();
    let potential = |c: &CausalChain| -> i64 {
        let sum: i64 = claims(c.cause).iter().map(|&s| pool[position(s)]).sum();
        cap(c).map_or(sum, |k| k.min(sum))
    };
    let pots: Vec<i64> = chains.iter().map(potential).collect();
    // The on-CPU finding with no mechanism named takes only what the
    // identified mechanisms leave.
    // Findings that measured their own loss take it before findings that
    // claim whole parts: a measure is narrower evidence than a part.
    let capped: Vec<bool> = chains.iter().map(|c| cap(c).is_some()).collect();
    order.sort_by_key(|&i| {
        (
            chains[i].cause == Cause::HostCompute,
            claims(chains[i].cause).len() != 1 && !capped[i],
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
        for &state in claims(c.cause) {
            let s = position(state);
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
    pool
}

/// Sets every chain's severity from the time it explains and ranks them:
/// by the idle time they explain, largest first. A GPU-bound verdict ranks
/// by the GPU's busy time when the GPU was busy more than idle; a finding
/// that explains no idle time but costs the loop its own time (allocator
/// churn, pageable copies) ranks by that time below every finding that
/// explains idle time.
pub fn rank(chains: &mut [CausalChain], idle: &ProcessIdle) {
    for c in chains.iter_mut() {
        c.severity = severity(c, idle);
        c.loop_cost_ns = step_time(c);
    }
    chains.sort_by(|a, b| {
        tier(b, idle)
            .cmp(&tier(a, idle))
            .then(rank_key(b, idle).total_cmp(&rank_key(a, idle)))
            .then(b.score.total_cmp(&a.score))
    });
}

/// Ranking tier: a finding that explains at least 40% of all the GPU's
/// idle time (start-up included) leads even a GPU-bound verdict (the idle
/// time left is mostly its), unless it names no code to act on; a
/// GPU-bound verdict of a GPU busier than idle comes next; every other
/// finding after, by the idle time it explains.
fn tier(c: &CausalChain, idle: &ProcessIdle) -> u8 {
    if c.cause == Cause::GpuBound {
        u8::from(busier_than_idle(idle))
    } else if c.explained_ns as f64 >= 0.4 * idle.host_wait_ns.max(1) as f64
        && !(c.cause == Cause::IdleCode && c.code.is_empty())
    {
        2
    } else {
        0
    }
}

/// The note on what no finding explains, by part, of `idle`'s whole idle
/// time; `None` when everything is explained.
pub fn unexplained_note(
    chains: &[CausalChain],
    pool: &[i64],
    idle: &ProcessIdle,
) -> Option<String> {
    let whole = idle.loop_idle_ns();
    let explained: i64 = chains.iter().map(|c| c.explained_ns).sum();
    let rest = (whole - explained).max(0);
    let outside = outside_loop(idle);
    if whole <= 0 || rest == 0 {
        return outside.map(|o| format!("Outside the loop, {o}."));
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
        "{} of the {} of GPU idle time in the loop of pid {} (first to last CUDA call; {}) is \
         explained by no finding: {}.{}",
        format::ns(rest),
        format::ns(whole),
        idle.pid,
        format::pct(rest as f64 / whole as f64),
        listed.join(", "),
        outside
            .map(|o| format!(" Outside the loop, not counted in the shares: {o}."))
            .unwrap_or_default()
    ))
}

/// Start-up and tail idle time in words, when there is any.
fn outside_loop(idle: &ProcessIdle) -> Option<String> {
    let c = &idle.causes;
    let mut parts = Vec::new();
    if c.before_first_call_ns > 0 {
        parts.push(format!(
            "{} before the first CUDA call",
            format::ns(c.before_first_call_ns)
        ));
    }
    if c.after_last_call_ns > 0 {
        parts.push(format!(
            "{} after the last",
            format::ns(c.after_last_call_ns)
        ));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
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

/// True when the GPU was busy longer than it idled while the job drove it
/// (start-up before the first CUDA call and the tail after the last left out).
fn busier_than_idle(idle: &ProcessIdle) -> bool {
    let c = &idle.causes;
    let loop_idle = idle.host_wait_ns - c.before_first_call_ns - c.after_last_call_ns;
    idle.busy_ns >= loop_idle
}

/// Ranking key: idle time explained (or loop time measured, for findings
/// that cost the loop time the busy figure counts as GPU work); a GPU-bound
/// verdict ranks by busy time.
fn rank_key(c: &CausalChain, idle: &ProcessIdle) -> f64 {
    if c.cause == Cause::GpuBound {
        if busier_than_idle(idle) {
            idle.busy_ns as f64
        } else {
            -1.0
        }
    } else {
        // Idle time explained, or the loop time the finding measured it
        // costs (time in the allocator, copies slower than pinned ones).
        c.explained_ns.max(step_time(c)) as f64
    }
}

/// Severity from the same quantity the ranking uses ([`rank_key`]), as a
/// share of the loop's idle time (the whole every finding's share is of), so
/// a finding never sits above another of higher severity: a GPU-bound
/// verdict from the busy share.
fn severity(c: &CausalChain, idle: &ProcessIdle) -> Severity {
    let share = if c.cause == Cause::GpuBound {
        1.0 - idle.idle_share
    } else {
        let whole = idle.loop_idle_ns().max(1) as f64;
        (rank_key(c, idle) / whole).min(1.0)
    };
    if share >= 0.25 {
        Severity::High
    } else if share >= 0.05 {
        Severity::Medium
    } else {
        Severity::Low
    }
}
