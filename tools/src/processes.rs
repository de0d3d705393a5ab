//! Per-process breakdown: who called CUDA, who competed for the CPU, who
//! allocated pages, and how the DataLoader workers relate to the main process.

use crate::dataset::Dataset;
use crate::error::Result;
use crate::scope::Scope;
use crate::stats::{ops_for, OpStats, WindowInfo};
use ingero_store::{HostKind, TraceDb};
use rusqlite::params;
use serde::Serialize;
use std::collections::BTreeMap;

/// Page allocations from which a Python child is taken to be building batches.
pub const WORKER_PAGE_ALLOCS: i64 = 10_000;

/// Threads listed per process besides its GPU thread (most off-CPU first);
/// the rest are counted in [`ProcessRow::threads_not_listed`].
pub const THREADS_LISTED: usize = 5;

/// One thread's CUDA calls and time off the CPU within the scope.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ThreadRow {
    /// Thread id.
    pub tid: i32,
    /// Outer CUDA calls it made (raw rows in the scope, or its activity
    /// spans when the capture folded calls; nested driver calls are part of
    /// the runtime call they were made from).
    pub cuda_calls: i64,
    /// Time inside those calls, ns.
    pub cuda_time_ns: i64,
    /// True when `cuda_calls` and `cuda_time_ns` come from the thread's
    /// activity spans (the capture folded calls in the kernel, so its raw
    /// rows are a sample); absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cuda_calls_from_spans: bool,
    /// Its context switches kept as raw rows that reach into its lifetime
    /// within the scope.
    pub switches: i64,
    /// Time off the CPU, ns: its off-CPU intervals clipped to its lifetime
    /// within the scope and merged, so never more than `lifetime_ns`.
    pub off_cpu_ns: i64,
    /// Longest single off-CPU stretch (clipped the same way), ns.
    pub off_cpu_max_ns: i64,
    /// Its lifetime within the scope, ns: from the first to the last instant
    /// the trace shows it (its off-CPU intervals and CUDA calls), inside the
    /// scope and its process's lifetime; at most the scope's length.
    pub lifetime_ns: i64,
    /// `off_cpu_ns / lifetime_ns` (0 when the lifetime is empty).
    pub off_cpu_share: f64,
}

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
    /// CUDA calls made, each logical call once (nested driver calls left out).
    pub cuda_calls: i64,
    /// Time inside CUDA calls, ns (outer calls only).
    pub cuda_time_ns: i64,
    /// Per-op statistics for this process.
    pub ops: Vec<OpStats>,
    /// Context switches (sched_switch with this process switched out).
    pub context_switches: i64,
    /// Of those, kept as raw rows.
    pub context_switch_raw_rows: i64,
    /// The thread that drives the GPU (most time in outer CUDA calls, then
    /// most calls) with its time off the CPU; none when the process made no
    /// raw CUDA calls in the scope.
    pub gpu_thread: Option<ThreadRow>,
    /// Its other threads, most off-CPU first (at most [`THREADS_LISTED`]).
    /// Off-CPU time is per thread: threads of one process are off the CPU at
    /// the same time, so a sum over them says nothing about the process.
    pub threads: Vec<ThreadRow>,
    /// Threads with raw rows in the scope not listed in `threads`.
    pub threads_not_listed: i64,
    /// Where the per-thread figures come from, in words.
    pub threads_basis: String,
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
    per_process_in(db, &ds)
}

/// Computes the breakdown from a dataset loaded from `db`, reading the
/// context switches of every thread (the dataset holds only the GPU
/// threads').
pub fn per_process_in(db: &TraceDb, ds: &Dataset) -> Result<ProcessBreakdown> {
    let switches = ThreadSwitches::load(db, ds)?;
    Ok(breakdown(ds, &switches))
}

/// Raw context-switch rows read per process for the per-thread split; a
/// process with more (a saturated DataLoader worker of a long capture) gets
/// its GPU threads' rows only and exact process totals, so one explain
/// stays within its time budget on 10M-event files.
const MAX_SWITCH_ROWS_PER_PID: i64 = 100_000;

/// Raw off-CPU intervals `(start, end)` per process and thread.
struct ThreadSwitches {
    by_pid: BTreeMap<i32, BTreeMap<i32, Vec<(i64, i64)>>>,
    /// False when only the GPU threads' switches were at hand.
    every_thread: bool,
    /// Processes whose rows were over [`MAX_SWITCH_ROWS_PER_PID`]: only
    /// their GPU threads' switches were read.
    capped: BTreeMap<i32, i64>,
}

impl ThreadSwitches {
    /// Every thread's switches reaching into the window, per pid through
    /// the `(pid, kind, ts)` index.
    fn load(db: &TraceDb, ds: &Dataset) -> Result<ThreadSwitches> {
        let q = |e: rusqlite::Error| db.classify(e);
        let mut stmt = db
            .conn()
            .prepare(
                "SELECT tid, ts_ns, dur_ns FROM host_events \
                 WHERE pid = ?1 AND kind = ?2 AND ts_ns <= ?3 AND ts_ns + dur_ns >= ?4",
            )
            .map_err(q)?;
        let mut by_pid = BTreeMap::new();
        let mut capped = BTreeMap::new();
        let gpu_rows = ThreadSwitches::of_gpu_threads(ds);
        for pid in in_scope(ds) {
            let stored = ds.host_totals(HostKind::SchedSwitch, Some(pid)).stored;
            if stored > MAX_SWITCH_ROWS_PER_PID {
                capped.insert(pid, stored);
                if let Some(t) = gpu_rows.by_pid.get(&pid) {
                    by_pid.insert(pid, t.clone());
                }
                continue;
            }
            let mut threads: BTreeMap<i32, Vec<(i64, i64)>> = BTreeMap::new();
            let mut rows = stmt
                .query(params![
                    pid,
                    HostKind::SchedSwitch.id(),
                    ds.window.hi_ns,
                    ds.window.lo_ns
                ])
                .map_err(q)?;
            while let Some(r) = rows.next().map_err(q)? {
                let tid: i32 = r.get(0).map_err(q)?;
                let ts: i64 = r.get(1).map_err(q)?;
                let dur: i64 = r.get(2).map_err(q)?;
                threads
                    .entry(tid)
                    .or_default()
                    .push((ts, ts.saturating_add(dur.max(0))));
            }
            if !threads.is_empty() {
                by_pid.insert(pid, threads);
            }
        }
        Ok(ThreadSwitches {
            by_pid,
            every_thread: true,
            capped,
        })
    }

    /// The GPU threads' switches the dataset already holds.
    fn of_gpu_threads(ds: &Dataset) -> ThreadSwitches {
        let mut by_pid: BTreeMap<i32, BTreeMap<i32, Vec<(i64, i64)>>> = BTreeMap::new();
        for h in ds
            .gpu_thread_switches
            .iter()
            .filter(|h| h.kind == HostKind::SchedSwitch)
        {
            by_pid
                .entry(h.pid)
                .or_default()
                .entry(h.tid)
                .or_default()
                .push((h.ts_ns, h.ts_ns.saturating_add(h.dur_ns.max(0))));
        }
        ThreadSwitches {
            by_pid,
            every_thread: false,
            capped: BTreeMap::new(),
        }
    }
}

/// Pids the breakdown covers (the focus process and its descendants when
/// the scope names one).
fn in_scope(ds: &Dataset) -> Vec<i32> {
    ds.all_pids()
        .into_iter()
        .filter(|pid| {
            ds.focus
                .is_none_or(|f| *pid == f || ds.descends_from(*pid, f))
        })
        .collect()
}

/// The part of the window a process lived in: the window cut to its first
/// and last sighting when the process table has a sane pair.
fn process_life(ds: &Dataset, pid: i32) -> (i64, i64) {
    let (lo, hi) = (ds.window.lo_ns, ds.window.hi_ns);
    match ds.processes.get(&pid) {
        Some(p) if p.first_seen_ns > 0 && p.last_seen_ns >= p.first_seen_ns => {
            let (a, b) = (lo.max(p.first_seen_ns), hi.min(p.last_seen_ns));
            if a < b {
                (a, b)
            } else {
                (lo, hi)
            }
        }
        _ => (lo, hi),
    }
}

/// Sorted, merged union of `v` cut to `span`.
fn merged(v: &[(i64, i64)], span: (i64, i64)) -> Vec<(i64, i64)> {
    let mut cut: Vec<(i64, i64)> = v
        .iter()
        .map(|(a, b)| ((*a).max(span.0), (*b).min(span.1)))
        .filter(|(a, b)| b > a)
        .collect();
    cut.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(cut.len());
    for (a, b) in cut {
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Per-thread rows of one process: CUDA calls from the dataset's raw rows,
/// off-CPU time from `switches`, each cut to the thread's lifetime.
fn thread_rows(
    ds: &Dataset,
    pid: i32,
    switches: Option<&BTreeMap<i32, Vec<(i64, i64)>>>,
) -> Vec<ThreadRow> {
    let life = process_life(ds, pid);
    // tid -> (outer calls, their time, first call start, last call end)
    let mut calls: BTreeMap<i32, (i64, i64, i64, i64)> = BTreeMap::new();
    for c in ds.calls.iter().filter(|c| c.pid == pid && !c.nested) {
        let e = calls.entry(c.tid).or_insert((0, 0, i64::MAX, i64::MIN));
        e.0 += 1;
        e.1 = e.1.saturating_add(c.dur_ns);
        e.2 = e.2.min(c.ts_ns);
        e.3 = e.3.max(c.ts_ns.saturating_add(c.dur_ns.max(0)));
    }
    // Under call folding the raw rows are a sample: every outer call of a
    // thread is in its activity spans.
    if ds.per_thread_from_spans() {
        for (tid, e) in calls.iter_mut() {
            if let Some(t) = ds.thread_calls(pid, *tid) {
                *e = (t.calls, t.api_ns, t.first_ns, t.last_ns);
            }
        }
    }
    let mut tids: Vec<i32> = calls.keys().copied().collect();
    if let Some(sw) = switches {
        tids.extend(sw.keys().copied());
    }
    tids.sort_unstable();
    tids.dedup();
    let empty: Vec<(i64, i64)> = Vec::new();
    tids.into_iter()
        .map(|tid| {
            let ivs = switches.and_then(|m| m.get(&tid)).unwrap_or(&empty);
            let call = calls.get(&tid).copied();
            // First and last sighting: its off-CPU intervals and calls.
            let first = ivs
                .iter()
                .map(|iv| iv.0)
                .chain(call.map(|c| c.2))
                .min()
                .unwrap_or(life.0);
            let last = ivs
                .iter()
                .map(|iv| iv.1)
                .chain(call.map(|c| c.3))
                .max()
                .unwrap_or(life.1);
            let span = (first.max(life.0), last.min(life.1));
            let lifetime_ns = (span.1 - span.0).max(0);
            let off = merged(ivs, span);
            let off_cpu_ns: i64 = off.iter().map(|(a, b)| b - a).sum();
            let off_cpu_max_ns = ivs
                .iter()
                .map(|(a, b)| ((*b).min(span.1) - (*a).max(span.0)).max(0))
                .max()
                .unwrap_or(0);
            let switches = ivs
                .iter()
                .filter(|(a, b)| *b >= span.0 && *a <= span.1)
                .count() as i64;
            ThreadRow {
                tid,
                cuda_calls: call.map_or(0, |c| c.0),
                cuda_time_ns: call.map_or(0, |c| c.1),
                cuda_calls_from_spans: call.is_some() && ds.per_thread_from_spans(),
                switches,
                off_cpu_ns,
                off_cpu_max_ns,
                lifetime_ns,
                off_cpu_share: if lifetime_ns > 0 {
                    (off_cpu_ns as f64 / lifetime_ns as f64).clamp(0.0, 1.0)
                } else {
                    0.0
                },
            }
        })
        .collect()
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
        // Page allocations alone say "builds something", not "a DataLoader":
        // where the child's Python stacks were sampled they must show
        // DataLoader code (a compiler or helper subprocess allocates too).
        let (sampled, in_loader) = ds.py_profiles.iter().filter(|((p, _), _)| *p == pid).fold(
            (0u64, 0u64),
            |(n, l), (_, prof)| {
                (
                    n + prof.samples,
                    l + prof.of(crate::pyframes::PyActivity::Loader),
                )
            },
        );
        let frames_allow = sampled < 20 || in_loader * 5 >= sampled;
        if named_sibling || (pages >= WORKER_PAGE_ALLOCS && frames_allow) {
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

/// Computes the breakdown from a loaded dataset alone: per-thread off-CPU
/// time for the GPU threads only (the dataset holds no other thread's
/// switches); [`per_process_in`] gives every thread.
pub fn per_process_of(ds: &Dataset) -> ProcessBreakdown {
    breakdown(ds, &ThreadSwitches::of_gpu_threads(ds))
}

fn breakdown(ds: &Dataset, switches: &ThreadSwitches) -> ProcessBreakdown {
    let (mains, cuda) = main_processes(ds);
    let mut rows: Vec<ProcessRow> = Vec::new();
    for pid in in_scope(ds) {
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
        let mut threads = thread_rows(ds, pid, switches.by_pid.get(&pid));
        // The GPU thread: most time in outer CUDA calls, then most calls.
        let gpu_tid = threads
            .iter()
            .filter(|t| t.cuda_calls > 0)
            .max_by(|a, b| {
                (a.cuda_time_ns, a.cuda_calls, -a.tid).cmp(&(b.cuda_time_ns, b.cuda_calls, -b.tid))
            })
            .map(|t| t.tid);
        let gpu_thread = gpu_tid
            .and_then(|tid| threads.iter().position(|t| t.tid == tid))
            .map(|i| threads.remove(i));
        threads.sort_by(|a, b| b.off_cpu_ns.cmp(&a.off_cpu_ns).then(a.tid.cmp(&b.tid)));
        let threads_not_listed = threads.len().saturating_sub(THREADS_LISTED) as i64;
        threads.truncate(THREADS_LISTED);
        let raw_switches: i64 = switches
            .by_pid
            .get(&pid)
            .map_or(0, |m| m.values().map(|v| v.len() as i64).sum());
        let threads_basis = if let Some(rows) = switches.capped.get(&pid) {
            format!(
                "{rows} context-switch rows, more than the {MAX_SWITCH_ROWS_PER_PID} read per \
                 process: threads split for its GPU threads only; the process totals count every switch"
            )
        } else if !switches.every_thread {
            "GPU thread only: the other threads' context switches are not loaded in this view"
                .to_string()
        } else if sw.count > raw_switches {
            format!(
                "raw rows: {raw_switches} of the process's {} context switches were kept, so \
                 per-thread off-CPU times are lower bounds",
                sw.count
            )
        } else {
            format!("raw rows: all {raw_switches} context switches")
        };
        let row = ProcessRow {
            pid,
            ppid: ds.parent_of(pid),
            comm: ds.comm(pid).to_string(),
            role,
            role_reason,
            cuda_calls: ops.iter().map(OpStats::outer_count).sum(),
            cuda_time_ns: ops.iter().map(OpStats::outer_ns).sum(),
            ops,
            context_switches: sw.count,
            context_switch_raw_rows: sw.stored,
            gpu_thread,
            threads,
            threads_not_listed,
            threads_basis,
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
            "Context-switch counts come from per-bucket totals; not every switch was kept as a \
             raw row, so per-thread off-CPU times (from raw rows) are lower bounds."
                .to_string(),
        );
    }
    notes.push(
        "Off-CPU time is per thread, cut to the thread's lifetime in the window: threads of one \
         process are off the CPU at the same time, so their sum is no measure of the process."
            .to_string(),
    );
    ProcessBreakdown {
        window: WindowInfo::of(ds),
        main_pid: mains.first().copied(),
        processes: rows,
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ingero_store::TimeWindow;
    use std::path::PathBuf;

    fn repo(rel: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(rel)
    }

    fn sql(conn: &rusqlite::Connection, q: &str) -> i64 {
        conn.query_row(q, [], |r| r.get(0)).expect(q)
    }

    fn row(b: &ProcessBreakdown, pid: i32) -> &ProcessRow {
        b.processes
            .iter()
            .find(|p| p.pid == pid)
            .expect("process row")
    }

    /// Every listed thread stays inside its lifetime and the window.
    fn bounded(b: &ProcessBreakdown) {
        let window = b.window.end_ns - b.window.start_ns;
        for p in &b.processes {
            for t in p.gpu_thread.iter().chain(p.threads.iter()) {
                assert!(t.off_cpu_ns <= t.lifetime_ns, "{} {t:?}", p.pid);
                assert!(t.lifetime_ns <= window, "{} {t:?}", p.pid);
                assert!(t.off_cpu_max_ns <= t.off_cpu_ns, "{} {t:?}", p.pid);
            }
            let off: Vec<i64> = p.threads.iter().map(|t| t.off_cpu_ns).collect();
            assert!(off.windows(2).all(|w| w[0] >= w[1]), "{off:?}");
            assert!(p.threads.len() <= THREADS_LISTED);
        }
    }

    #[test]
    fn native_off_cpu_is_per_thread() {
        let db = TraceDb::open(&repo("investigations/pageable-vs-pinned-h200.db")).expect("open");
        let b = per_process(&db, &Scope::ALL).expect("breakdown");
        bounded(&b);
        let c = db.conn();
        let window = b.window.end_ns - b.window.start_ns;
        // The old per-process figure: every thread's off-CPU time summed.
        let summed = sql(
            c,
            "SELECT SUM(sum_dur_ns) FROM aggregates WHERE source = 2 AND code = 1 AND pid = 541",
        );
        assert!(summed > 20 * window, "{summed} vs {window}");
        let p = row(&b, 541);
        let gpu = p.gpu_thread.as_ref().expect("GPU thread");
        let gpu_tid = sql(
            c,
            "SELECT tid FROM cuda_calls WHERE pid = 541 GROUP BY tid ORDER BY SUM(dur_ns) DESC LIMIT 1",
        );
        assert_eq!(gpu.tid as i64, gpu_tid);
        let (lo, hi) = (b.window.start_ns, b.window.end_ns);
        let off = sql(
            c,
            &format!(
                "SELECT SUM(MAX(0, MIN(ts_ns + dur_ns, {hi}, p.last_seen_ns) - MAX(ts_ns, {lo}, p.first_seen_ns))) \
                 FROM host_events h JOIN processes p ON p.pid = h.pid \
                 WHERE h.pid = 541 AND h.tid = {gpu_tid} AND h.kind = 1"
            ),
        );
        assert_eq!(gpu.off_cpu_ns, off);
        assert!(off < window);
        let switches = sql(
            c,
            &format!(
                "SELECT COUNT(*) FROM host_events WHERE pid = 541 AND tid = {gpu_tid} AND kind = 1"
            ),
        );
        assert_eq!(gpu.switches, switches);
        // Every other thread is listed or counted.
        let tids = sql(
            c,
            "SELECT COUNT(*) FROM (SELECT tid FROM host_events WHERE pid = 541 AND kind = 1 \
             UNION SELECT tid FROM cuda_calls WHERE pid = 541)",
        );
        assert_eq!(p.threads.len() as i64 + p.threads_not_listed + 1, tids);
        let top = sql(
            c,
            &format!(
                "SELECT MAX(s) FROM (SELECT SUM(dur_ns) AS s FROM host_events \
                 WHERE pid = 541 AND kind = 1 AND tid <> {gpu_tid} GROUP BY tid)"
            ),
        );
        assert!(p.threads[0].off_cpu_ns <= top && p.threads[0].off_cpu_ns > window / 2);
        // From the dataset alone only the GPU thread is known, with the same figures.
        let ds = Dataset::load(&db, &Scope::ALL).expect("dataset");
        let only = per_process_of(&ds);
        let q = row(&only, 541);
        assert_eq!(q.gpu_thread.as_ref().map(|t| t.off_cpu_ns), Some(off));
        assert!(q.threads.is_empty());
        assert!(q.threads_basis.starts_with("GPU thread only"));
    }

    #[test]
    fn a_window_cuts_long_off_cpu_stretches() {
        let db = TraceDb::open(&repo(
            "investigations/pytorch-dataloader-starvation-h200.db",
        ))
        .expect("open");
        let scope = Scope {
            window: TimeWindow::parse(Some("30s"), None).expect("window"),
            pid: None,
        };
        let b = per_process(&db, &scope).expect("breakdown");
        bounded(&b);
        let p = row(&b, 453);
        let (lo, hi) = (b.window.start_ns, b.window.end_ns);
        // The longest stretch of the busiest other thread begins before the window.
        let t = &p.threads[0];
        let inside = sql(
            db.conn(),
            &format!(
                "SELECT SUM(MAX(0, MIN(ts_ns + dur_ns, {hi}) - MAX(ts_ns, {lo}))) FROM host_events \
                 WHERE pid = 453 AND tid = {} AND kind = 1",
                t.tid
            ),
        );
        let began_before = sql(
            db.conn(),
            &format!(
                "SELECT COUNT(*) FROM host_events WHERE pid = 453 AND tid = {} AND kind = 1 \
                 AND ts_ns < {lo} AND ts_ns + dur_ns > {lo}",
                t.tid
            ),
        );
        assert!(began_before > 0);
        assert_eq!(t.off_cpu_ns, inside);
    }

    #[test]
    fn ingero_gpu_thread_off_cpu_from_switch_in_stamps() {
        let path = repo("tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
        let db = TraceDb::open(&path).expect("open");
        let b = per_process(&db, &Scope::ALL).expect("breakdown");
        bounded(&b);
        let raw = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("raw");
        let (lo, hi) = (b.window.start_ns, b.window.end_ns);
        let off = sql(
            &raw,
            &format!(
                "SELECT SUM(MAX(0, MIN(timestamp, {hi}) - MAX(timestamp - duration, {lo}))) \
                 FROM events WHERE source = 3 AND op = 1 AND tid = 2233"
            ),
        );
        let p = row(&b, 2233);
        let gpu = p.gpu_thread.as_ref().expect("GPU thread");
        assert_eq!(gpu.tid, 2233);
        assert_eq!(gpu.off_cpu_ns, off);
        // The thread's life: first CUDA call to its last return to the CPU.
        let first = sql(
            &raw,
            "SELECT MIN(timestamp) FROM events WHERE tid = 2233 AND source IN (1, 4)",
        );
        let last = sql(
            &raw,
            "SELECT MAX(timestamp) FROM events WHERE tid = 2233 AND source = 3 AND op = 1",
        );
        assert_eq!(gpu.lifetime_ns, last - first);
        assert!(p.threads_basis.contains("lower bounds"));
    }
}
