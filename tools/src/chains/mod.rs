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

use crate::dataset::Dataset;
use crate::error::Result;
use crate::idle::ProcessIdle;
use crate::scope::Scope;
use crate::stats::WindowInfo;
use context::{Context, Symptom};
use ingero_store::TraceDb;
use serde::Serialize;

/// The host-side mechanism a chain blames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// The GPU idles while its feeding thread prepares input on the CPU
    /// (per-sample DataLoader fetch and collate).
    HostInputPipeline,
    /// The training job's own DataLoader workers saturate the CPU and preempt the GPU thread.
    DataloaderWorkerContention,
    /// Processes outside the job saturate the CPU and preempt the GPU thread.
    CpuContention,
    /// Bursts of kernel page allocations coincide with slow CUDA calls.
    PageAllocStorm,
    /// Many processes forked at once (worker start-up) coincide with slow CUDA calls.
    WorkerForkStorm,
    /// The host ran short of memory (high use, swapping).
    MemoryPressure,
    /// Host-to-device copies from pageable memory run at a fraction of pinned bandwidth.
    PageableMemcpy,
    /// Device allocations periodically take far longer than usual (allocator cache misses).
    AllocationSpike,
    /// The first CUDA calls (context creation, module loading) dominate the run.
    ColdStart,
    /// The host mostly waits on the GPU: the GPU is the bottleneck, not the host.
    GpuBound,
    /// The GPU thread works on the CPU outside CUDA while the GPU idles, and
    /// the capture holds no evidence of what that work is.
    HostCompute,
    /// The GPU thread blocks waiting on its DataLoader workers, which are
    /// too few or too slow for it.
    SlowWorkers,
    /// Device memory is allocated and freed in the loop, step after step.
    AllocatorChurn,
    /// The loop issues many tiny kernels and the host's launch path, not
    /// the GPU, sets the pace.
    LaunchBound,
    /// One long off-CPU stretch of the GPU thread while the loop runs.
    LongBlock,
    /// The GPU thread waits to take the Python GIL (stacks show it).
    GilContention,
    /// The GPU thread waits on disk or page-cache I/O (stacks show it).
    BlockingIo,
    /// The GPU thread sleeps in its loop (stacks show it).
    HostSleep,
    /// The process waits for input on sockets or file descriptors: no work
    /// arrives (stacks show it). A negative: no host-side bottleneck.
    WaitingForWork,
    /// The GPU thread waits on a lock or condition (stacks show a futex).
    LockWait,
    /// Every step reads a scalar back from the GPU and waits for it.
    SyncInLoop,
    /// The job compiles (torch.compile, Triton JIT or autotuning) while the
    /// GPU waits: compilation frames in its stacks, compiler processes.
    CompileStall,
    /// GPU idle time no mechanism's evidence covers, named by the code the
    /// GPU thread was in meanwhile (its stacks inside exactly that time).
    IdleCode,
}

impl Cause {
    /// Stable snake_case name.
    pub fn name(self) -> &'static str {
        match self {
            Cause::HostInputPipeline => "host_input_pipeline",
            Cause::DataloaderWorkerContention => "dataloader_worker_contention",
            Cause::CpuContention => "cpu_contention",
            Cause::PageAllocStorm => "page_alloc_storm",
            Cause::WorkerForkStorm => "worker_fork_storm",
            Cause::MemoryPressure => "memory_pressure",
            Cause::PageableMemcpy => "pageable_memcpy",
            Cause::AllocationSpike => "allocation_spike",
            Cause::ColdStart => "cold_start",
            Cause::GpuBound => "gpu_bound",
            Cause::HostCompute => "host_compute",
            Cause::SlowWorkers => "slow_workers",
            Cause::AllocatorChurn => "allocator_churn",
            Cause::LaunchBound => "launch_bound",
            Cause::LongBlock => "long_block",
            Cause::GilContention => "gil_contention",
            Cause::BlockingIo => "blocking_io",
            Cause::HostSleep => "host_sleep",
            Cause::WaitingForWork => "waiting_for_work",
            Cause::LockWait => "lock_wait",
            Cause::SyncInLoop => "sync_in_loop",
            Cause::CompileStall => "compile_stall",
            Cause::IdleCode => "idle_code",
        }
    }
}

/// How urgent a chain is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    /// Worth knowing.
    Low,
    /// Costs measurable time.
    Medium,
    /// The main reason the GPU waits.
    High,
}

impl Severity {
    /// Severity for a chain score.
    pub fn from_score(score: f64) -> Severity {
        if score >= 60.0 {
            Severity::High
        } else if score >= 35.0 {
            Severity::Medium
        } else {
            Severity::Low
        }
    }

    /// Upper-case label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Low => "LOW",
            Severity::Medium => "MEDIUM",
            Severity::High => "HIGH",
        }
    }
}

/// One number supporting a chain, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Evidence {
    /// What is measured.
    pub label: String,
    /// The value.
    pub value: f64,
    /// Its unit (`ns`, `count`, `percent`, `bytes`, `ratio`, `bytes/s`).
    pub unit: String,
    /// Which data it was computed from.
    pub source: String,
}

impl Evidence {
    /// Builds an evidence item.
    pub fn new(label: impl Into<String>, value: f64, unit: &str, source: &str) -> Evidence {
        Evidence {
            label: label.into(),
            value,
            unit: unit.to_string(),
            source: source.to_string(),
        }
    }
}

/// One link of the chain, from system state down to the CUDA call.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChainStep {
    /// `SYSTEM`, `HOST`, `CUDA` or `GPU` (the GPU's own NVML samples, or
    /// the host-side bound on them).
    pub layer: String,
    /// What happened at that layer.
    pub detail: String,
}

/// A diagnosed cause of GPU starvation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CausalChain {
    /// Stable id within the report (`chain-1` is the top one).
    pub id: String,
    /// Mechanism blamed.
    pub cause: Cause,
    /// Urgency.
    pub severity: Severity,
    /// Ranking score, 0-100 (how strong the evidence is).
    pub score: f64,
    /// GPU idle time of the victim process this finding accounts for, ns;
    /// no two findings count the same stretch (see `explained`).
    pub explained_ns: i64,
    /// `explained_ns` as a share of the victim's whole GPU idle time.
    pub explained_share: f64,
    /// One line: symptom <- cause.
    pub summary: String,
    /// The root cause in one sentence.
    pub root_cause: String,
    /// Links from system state to the CUDA call.
    pub steps: Vec<ChainStep>,
    /// Numbers behind the diagnosis.
    pub evidence: Vec<Evidence>,
    /// CUDA functions affected.
    pub affected_ops: Vec<String>,
    /// The GPU-driving process that suffers.
    pub victim_pid: Option<i32>,
    /// Processes causing it.
    pub culprit_pids: Vec<i32>,
    /// Seconds after capture start where the evidence concentrates.
    pub start_offset_s: f64,
    /// End of that stretch, seconds after capture start.
    pub end_offset_s: f64,
    /// The concrete change to make.
    pub fix: String,
    /// The code the GPU thread was in during the idle time this finding
    /// explains, largest first (empty without stack samples).
    pub code: Vec<crate::code::CodeShare>,
    /// For a finding named by its code: the part of the idle split it
    /// explains (`off_cpu_blocked`, `host_compute`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
}

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
                "ns",
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
            .map(|&s| crate::idle::parts::PARTS[crate::idle::parts::position(s)].key)
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

/// Builds a chain with its severity derived from the score.
#[allow(clippy::too_many_arguments)]
pub(crate) fn chain(
    ctx: &Context,
    cause: Cause,
    score: f64,
    summary: String,
    root_cause: String,
    steps: Vec<ChainStep>,
    evidence: Vec<Evidence>,
    affected_ops: Vec<String>,
    culprit_pids: Vec<i32>,
    span_ns: (i64, i64),
    fix: &str,
) -> CausalChain {
    let score = score.clamp(0.0, 100.0);
    let start = ctx.ds.span.start_ns;
    CausalChain {
        id: String::new(),
        cause,
        severity: Severity::from_score(score),
        score,
        explained_ns: 0,
        explained_share: 0.0,
        summary,
        root_cause,
        steps,
        evidence,
        affected_ops,
        victim_pid: ctx.main,
        culprit_pids,
        start_offset_s: ((span_ns.0 - start) as f64 / 1e9).max(0.0),
        end_offset_s: ((span_ns.1 - start) as f64 / 1e9).max(0.0),
        fix: fix.to_string(),
        code: Vec::new(),
        part: None,
    }
}

/// A chain step.
pub(crate) fn step(layer: &str, detail: String) -> ChainStep {
    ChainStep {
        layer: layer.to_string(),
        detail,
    }
}

/// Impact points (0-40) for a share of wall time lost.
pub(crate) fn impact_points(share: f64) -> f64 {
    40.0 * (share * 4.0).clamp(0.0, 1.0)
}
