//! Causal chains: tail latency and lost time in CUDA calls, linked by time
//! window and pid to the host cause that explains it, with evidence and a fix.
//!
//! Each detector ([`pipeline`], [`contention`], [`memory`], [`copies`], [`alloc`],
//! [`lifecycle`], [`gpu_bound`]) looks at the shared [`context::Context`] and
//! returns at most one chain. A chain's score is its evidence strength
//! (0-60) plus its impact (0-40: the share of the GPU thread's wall time the
//! cause plausibly cost); chains are ranked by score.

pub mod alloc;
pub mod blocked;
mod build;
pub mod churn;
pub mod code_finding;
pub mod compile;
pub mod contention;
pub mod context;
pub mod copies;
pub mod explained;
pub mod gpu_bound;
pub mod launch_bound;
pub mod lifecycle;
pub mod long_block;
pub mod measured;
pub mod memory;
pub mod phase;
pub mod pipeline;
pub mod slow_workers;
pub mod sync_loop;
pub mod sync_refill;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::finding::Unit;
use crate::idle::ProcessIdle;
use crate::scope::Scope;
use crate::stats::WindowInfo;
use context::{Context, Symptom};
use ingero_store::TraceDb;
use serde::Serialize;

pub use crate::finding::{CausalChain, Cause, ChainStep, Evidence, Severity};

/// Answer of `get_causal_chains`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChainReport {
    /// The window covered.
    pub window: WindowInfo,
    /// How idle the GPU was per GPU-driving process, and why (read this first).
    pub gpu_idle: Vec<ProcessIdle>,
    /// Chains, strongest first.
    pub chains: Vec<CausalChain>,
    /// CUDA-side symptoms of the main GPU process (tails, sync and copy shares).
    pub symptoms: Vec<Symptom>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Finds the causal chains for `scope`.
pub fn causal_chains(db: &TraceDb, scope: &Scope) -> Result<ChainReport> {
    let ds = Dataset::load(db, scope)?;
    Ok(chains_of(&ds))
}

/// Finds the causal chains in a loaded dataset.
pub fn chains_of(ds: &Dataset) -> ChainReport {
    chains_with_starvation(ds).0
}

/// The causal chains and the per-process starvation estimates they were
/// built from, computed once.
pub fn chains_with_starvation(
    ds: &Dataset,
) -> (ChainReport, Vec<crate::starvation::StarvationEstimate>) {
    let ctx = Context::build(ds);
    let mut chains: Vec<CausalChain> = [
        // A loop fed by on-CPU work overall, else one on-CPU phase in it.
        pipeline::detect(&ctx).or_else(|| phase::detect(&ctx)),
        contention::detect(&ctx),
        copies::detect(&ctx),
        churn::detect(&ctx),
        // Occasional slow allocations are another mechanism than allocation
        // in every step: with churn present, they are part of it.
        if churn::present(&ctx) {
            None
        } else {
            alloc::detect(&ctx)
        },
        launch_bound::detect(&ctx),
        long_block::detect(&ctx),
        slow_workers::detect(&ctx),
        sync_loop::detect(&ctx),
        compile::detect(&ctx),
        lifecycle::detect_cold_start(&ctx),
        lifecycle::detect_fork_storm(&ctx),
        memory::detect_page_storm(&ctx),
        memory::detect_pressure(&ctx),
        gpu_bound::detect(&ctx),
    ]
    .into_iter()
    .flatten()
    .chain(blocked::detect(&ctx))
    .collect();
    // Forked processes that then saturate the CPU are contention, not
    // start-up: the slow calls after the forks are the contention's.
    let contenders: Vec<i32> = chains
        .iter()
        .filter(|c| {
            matches!(
                c.cause,
                Cause::CpuContention | Cause::DataloaderWorkerContention
            )
        })
        .flat_map(|c| c.culprit_pids.iter().copied())
        .collect();
    chains.retain(|c| {
        c.cause != Cause::WorkerForkStorm || {
            let kids: Vec<&i32> = c.culprit_pids.iter().skip(1).collect();
            let busy = kids.iter().filter(|k| contenders.contains(k)).count();
            kids.is_empty() || busy * 2 < kids.len()
        }
    });
    chains.sort_by(|a, b| b.score.total_cmp(&a.score));
    let main_idle = ctx.idle.iter().find(|p| Some(p.pid) == ctx.main);
    let mut unexplained = None;
    if let Some(idle) = main_idle {
        gate_by_code(&mut chains, idle);
        let mut pool = explained::claim(&mut chains, idle);
        attach_code(&mut chains, idle);
        chains.extend(code_finding::detect(&ctx, idle, &mut pool));
        explained::rank(&mut chains, idle);
        unexplained = explained::unexplained_note(&chains, &pool, idle);
    }
    keep_living_culprits(&mut chains, ds);
    for (i, c) in chains.iter_mut().enumerate() {
        c.id = format!("chain-{}", i + 1);
        c.score = (c.score * 10.0).round() / 10.0;
    }
    let mut notes = ctx.notes.clone();
    notes.extend(gpu_bound::note(&ctx));
    notes.extend(unexplained);
    if chains.is_empty() {
        notes.push(if ctx.main.is_none() {
            "No CUDA calls in this window: nothing to explain on the GPU side.".to_string()
        } else {
            "No host-side cause stands out in this window.".to_string()
        });
    }
    let report = ChainReport {
        window: WindowInfo::of(ds),
        gpu_idle: ctx.idle.clone(),
        chains,
        symptoms: ctx.symptoms.clone(),
        notes,
    };
    (report, ctx.starvation_all)
}

/// A process named as a culprit must be alive during the finding's
/// stretch: one that first appears after it (or was gone before it) is no
/// part of it, whatever its totals over the window.
fn keep_living_culprits(chains: &mut [CausalChain], ds: &Dataset) {
    let start = ds.span.start_ns;
    for c in chains.iter_mut() {
        let (a, b) = (
            start + (c.start_offset_s * 1e9) as i64,
            start + (c.end_offset_s * 1e9) as i64,
        );
        if b <= a {
            continue;
        }
        c.culprit_pids.retain(|pid| {
            ds.processes.get(pid).is_none_or(|p| {
                let first = if p.first_seen_ns > 0 {
                    p.first_seen_ns
                } else {
                    i64::MIN
                };
                let last = if p.last_seen_ns > 0 {
                    p.last_seen_ns
                } else {
                    i64::MAX
                };
                first <= b && last >= a
            })
        });
    }
}

/// Drops findings whose claim the code attribution contradicts: an on-CPU
/// finding with no mechanism named gives way to the findings named by code
/// where the on-CPU time has stacks.
fn gate_by_code(chains: &mut Vec<CausalChain>, idle: &ProcessIdle) {
    let compute_code = idle
        .code
        .iter()
        .any(|p| p.key == "host_compute" && !p.code.is_empty() && p.coverage > 0.0);
    if compute_code {
        // One on-CPU phase named from its own samples stays: it says more
        // than the code of the whole part.
        chains.retain(|c| {
            c.cause != Cause::HostCompute || c.evidence.iter().any(|e| e.label == "phase_time")
        });
    }
    // Processes started in every step of the loop are no start-up storm:
    // the loop's own code starts them (the step's code says which).
    if idle
        .per_step
        .as_ref()
        .is_some_and(|p| p.processes_started >= 0.5 && p.steps >= 10.0)
    {
        // Nor is waiting on the descriptors of those processes "no work
        // arriving": the loop waits on its own children.
        chains.retain(|c| !matches!(c.cause, Cause::WorkerForkStorm | Cause::WaitingForWork));
    }
    // A page-allocation storm claims only the time its stacks show in the
    // page-fault path: work that happens to allocate while doing something
    // else is that something else.
    let fault_ns: Option<i64> = idle
        .code
        .iter()
        .filter(|p| matches!(p.key.as_str(), "page_alloc_storm" | "host_compute"))
        .filter(|p| p.coverage > 0.0)
        .map(|p| p.in_page_fault_ns)
        .reduce(|a, b| a + b);
    if let Some(ns) = fault_ns {
        for c in chains
            .iter_mut()
            .filter(|c| c.cause == Cause::PageAllocStorm)
        {
            c.evidence.push(Evidence::new(
                "fault_path_time",
                ns as f64,
                Unit::Ns,
                "on-CPU stacks in the page-fault path",
            ));
        }
    }
}

/// Gives each mechanism's finding the code of the idle parts it claims,
/// largest first.
fn attach_code(chains: &mut [CausalChain], idle: &ProcessIdle) {
    for c in chains.iter_mut() {
        if c.explained_ns <= 0 || !c.code.is_empty() {
            continue;
        }
        let keys: Vec<&str> = explained::claims(c.cause)
            .iter()
            .map(|&s| crate::idle_split::parts::PARTS[crate::idle_split::parts::position(s)].key)
            .collect();
        let mut code: Vec<crate::code::CodeShare> = idle
            .code
            .iter()
            .filter(|p| keys.contains(&p.key.as_str()))
            .flat_map(|p| p.code.iter().cloned())
            .collect();
        code.sort_by_key(|c| std::cmp::Reverse(c.idle_ns));
        code.truncate(3);
        c.code = code;
    }
}
