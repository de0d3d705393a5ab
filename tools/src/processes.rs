//! Per-process breakdown: who called CUDA, who competed for the CPU, who
//! allocated pages, and how the DataLoader workers relate to the main process.

use crate::dataset::Dataset;
use crate::error::Result;
use crate::scope::Scope;
use crate::stats::{ops_for, OpStats, WindowInfo};
use ingero_store::{HostKind, TraceDb};
use serde::Serialize;

/// Page allocations from which a Python child is taken to be building batches.
pub const WORKER_PAGE_ALLOCS: i64 = 10_000;

/// What a process is in the training job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Drives the GPU and has no GPU-driving ancestor.
    Main,
    /// A descendant of a main process that also calls CUDA.
    GpuChild,
    /// A DataLoader worker (named `pt_data_worker`, or a Python child of the
    /// main process that makes no CUDA calls and builds batches).
    DataloaderWorker,
    /// PyTorch's pin-memory helper.
    PinMemory,
    /// Any other descendant of a main process.
    Child,
    /// A process outside the traced job's tree.
    External,
}

impl Role {
    /// True for processes inside a traced job's tree other than the main one.
    pub fn is_job_helper(self) -> bool {
        matches!(
            self,
            Role::DataloaderWorker | Role::PinMemory | Role::Child | Role::GpuChild
        )
    }
}

/// One process's share of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessRow {
    /// Process id.
    pub pid: i32,
    /// Parent pid, 0 when unknown.
    pub ppid: i32,
    /// Command name, empty when unknown.
    pub comm: String,
    /// Role in the job.
    pub role: Role,
    /// Why that role was given.
    pub role_reason: String,
    /// CUDA calls made.
    pub cuda_calls: i64,
    /// Time inside CUDA calls, ns.
    pub cuda_time_ns: i64,
    /// Per-op statistics for this process.
    pub ops: Vec<OpStats>,
    /// Context switches (sched_switch with this process switched out).
    pub context_switches: i64,
    /// Of those, kept as raw rows.
    pub context_switch_raw_rows: i64,
    /// Total off-CPU time after those switches, ns.
    pub off_cpu_total_ns: i64,
    /// Mean off-CPU time per switch, ns.
    pub off_cpu_mean_ns: Option<f64>,
    /// Longest single off-CPU stretch, ns.
    pub off_cpu_max_ns: i64,
    /// Wake-ups.
    pub wakeups: i64,
    /// Page allocations (mm_page_alloc events).
    pub page_allocs: i64,
    /// Bytes covered by those allocations.
    pub page_alloc_bytes: i64,
    /// Processes this one forked in the window.
    pub forks: i64,
    /// Direct children known from the process table or fork events.
    pub children: Vec<i32>,
}

/// Answer of `get_per_process_breakdown`.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ProcessBreakdown {
    /// The window covered.
    pub window: WindowInfo,
    /// The GPU-driving process with the most CUDA time, if any.
    pub main_pid: Option<i32>,
    /// Processes: main ones first, then their helpers, then the rest by context switches.
    pub processes: Vec<ProcessRow>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Computes the breakdown for `scope`.
pub fn per_process(db: &TraceDb, scope: &Scope) -> Result<ProcessBreakdown> {
    let ds = Dataset::load(db, scope)?;
    Ok(per_process_of(&ds))
}

/// Role of `pid` given the GPU-driving processes.
pub fn role_of(ds: &Dataset, pid: i32, mains: &[i32], cuda_pids: &[i32]) -> (Role, String) {
    if mains.contains(&pid) {
        return (
            Role::Main,
            "makes CUDA calls; no GPU-driving ancestor".into(),
        );
    }
    let Some(main) = mains.iter().copied().find(|m| ds.descends_from(pid, *m)) else {
        return (
            Role::External,
            "not a descendant of a GPU-driving process".into(),
        );
    };
    if cuda_pids.contains(&pid) {
        return (
            Role::GpuChild,
            format!("descendant of {main} that calls CUDA"),
        );
    }
    let comm = ds.comm(pid);
    if comm.starts_with("pt_data_worker") {
        return (
            Role::DataloaderWorker,
            format!("named {comm}, descendant of {main}"),
        );
    }
    if comm.starts_with("pt_data_pin") {
        return (
            Role::PinMemory,
            format!("named {comm}, descendant of {main}"),
        );
    }
    // A Python child is a DataLoader worker when the evidence says so: a
    // sibling carries PyTorch's worker name, or it builds batches (many page
    // allocations). Other children (busy loops, helpers) stay plain children.
    let main_comm = ds.comm(main);
    let python_child = !comm.is_empty() && (comm == main_comm || comm.starts_with("python"));
    if python_child {
        let parent = ds.parent_of(pid);
        let named_sibling = ds
            .processes
            .values()
            .any(|p| p.ppid == parent && p.comm.starts_with("pt_data_worker"));
        let pages = ds.host_totals(HostKind::PageAlloc, Some(pid)).count;
        if named_sibling || pages >= WORKER_PAGE_ALLOCS {
            return (
                Role::DataloaderWorker,
                format!(
                    "a {comm} child of {main} making no CUDA calls, {}",
                    if named_sibling {
                        "beside pt_data_worker siblings".to_string()
                    } else {
                        format!("{pages} page allocations (building batches)")
                    }
                ),
            );
        }
    }
    (Role::Child, format!("descendant of {main}"))
}

/// GPU-driving processes with no GPU-driving ancestor, most CUDA time first.
pub fn main_processes(ds: &Dataset) -> (Vec<i32>, Vec<i32>) {
    let cuda: Vec<i32> = ds.cuda_pids().into_iter().collect();
    let mut mains: Vec<i32> = cuda
        .iter()
        .copied()
        .filter(|p| !cuda.iter().any(|a| a != p && ds.descends_from(*p, *a)))
        .collect();
    let time = |p: i32| {
        ds.totals(ingero_store::AggSource::Cuda, None, Some(p))
            .sum_dur_ns
            .max(
                ds.calls
                    .iter()
                    .filter(|c| c.pid == p)
                    .map(|c| c.dur_ns)
                    .sum(),
            )
    };
    mains.sort_by_key(|p| std::cmp::Reverse(time(*p)));
    (mains, cuda)
}

/// Computes the breakdown from a loaded dataset.
pub fn per_process_of(ds: &Dataset) -> ProcessBreakdown {
    let (mains, cuda) = main_processes(ds);
    let mut rows: Vec<ProcessRow> = Vec::new();
    for pid in ds.all_pids() {
        if let Some(f) = ds.focus {
            if pid != f && !ds.descends_from(pid, f) {
                continue;
            }
        }
        let (role, role_reason) = role_of(ds, pid, &mains, &cuda);
        let ops = ops_for(ds, Some(pid));
        let sw = ds.host_totals(HostKind::SchedSwitch, Some(pid));
        let pages = ds.host_totals(HostKind::PageAlloc, Some(pid));
        let forks = ds.host_totals(HostKind::Fork, Some(pid));
        let wake = ds.host_totals(HostKind::SchedWakeup, Some(pid));
        let forks_raw = ds
            .lifecycle
            .iter()
            .filter(|h| h.kind == HostKind::Fork && h.pid == pid)
            .count() as i64;
        let mut children: Vec<i32> = ds
            .processes
            .values()
            .filter(|p| p.ppid == pid && p.pid != pid)
            .map(|p| p.pid)
            .collect();
        children.extend(
            ds.lifecycle
                .iter()
                .filter(|h| h.kind == HostKind::Fork && h.pid == pid && h.arg as i32 != pid)
                .map(|h| h.arg as i32),
        );
        children.sort_unstable();
        children.dedup();
        let row = ProcessRow {
            pid,
            ppid: ds.parent_of(pid),
            comm: ds.comm(pid).to_string(),
            role,
            role_reason,
            cuda_calls: ops.iter().map(|o| o.count).sum(),
            cuda_time_ns: ops.iter().map(|o| o.total_ns).sum(),
            ops,
            context_switches: sw.count,
            context_switch_raw_rows: sw.stored,
            off_cpu_total_ns: sw.sum_dur_ns,
            off_cpu_mean_ns: sw.mean_ns(),
            off_cpu_max_ns: sw.max_dur_ns,
            wakeups: wake.count,
            page_allocs: pages.count,
            page_alloc_bytes: pages.sum_bytes,
            forks: forks.count.max(forks_raw),
            children,
        };
        let active =
            row.cuda_calls + row.context_switches + row.page_allocs + row.forks + row.wakeups;
        if active > 0 || role != Role::External {
            rows.push(row);
        }
    }
    let rank = |r: &ProcessRow| -> (usize, usize, i64) {
        let tree = mains
            .iter()
            .position(|m| *m == r.pid || ds.descends_from(r.pid, *m))
            .unwrap_or(mains.len());
        let within = if r.role == Role::Main { 0 } else { 1 };
        (tree, within, -r.context_switches)
    };
    rows.sort_by_key(|r| (rank(r), r.pid));
    let mut notes = Vec::new();
    if rows
        .iter()
        .any(|r| r.context_switches > 0 && r.context_switch_raw_rows < r.context_switches)
    {
        notes.push(
            "Context-switch counts, off-CPU totals and maxima come from per-bucket totals; \
             not every switch was kept as a raw row."
                .to_string(),
        );
    }
    ProcessBreakdown {
        window: WindowInfo::of(ds),
        main_pid: mains.first().copied(),
        processes: rows,
        notes,
    }
}
