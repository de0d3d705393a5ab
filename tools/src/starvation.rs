//! How long the GPU-driving thread of each process was kept away from the
//! GPU by the host: off-CPU (preempted or blocked) or busy on the host side.

use crate::dataset::Dataset;
use crate::processes::main_processes;
use ingero_store::{AggSource, HostKind, OpClass};
use serde::Serialize;

/// Where the GPU-driving thread's wall time went.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StarvationEstimate {
    /// Process id.
    pub pid: i32,
    /// Command name.
    pub comm: String,
    /// The thread that spent the most time in CUDA calls.
    pub gpu_thread: i32,
    /// From its first CUDA call to the end of its last one, ns.
    pub wall_ns: i64,
    /// Time inside CUDA calls (all ops), ns.
    pub cuda_api_ns: i64,
    /// Of which waiting in synchronisation calls, ns.
    pub sync_wait_ns: i64,
    /// Time the thread was switched out (preempted or blocked), ns.
    pub off_cpu_ns: i64,
    /// Context switches of the thread in that span.
    pub off_cpu_switches: i64,
    /// Of those, preemptions (the thread was runnable and waited in the run
    /// queue); `None` when the recorder did not say which switches were preemptions.
    pub preemptions: Option<i64>,
    /// Off-CPU time after preemptions: time spent waiting for a core, ns.
    pub run_queue_wait_ns: Option<i64>,
    /// On-CPU time outside CUDA calls (Python, data preparation), ns.
    pub host_compute_ns: i64,
    /// Share of wall time outside CUDA calls: the GPU got no new work from
    /// this thread then (an upper bound on GPU idleness caused by the host).
    pub starved_share: f64,
    /// Share of wall time the thread was off-CPU.
    pub off_cpu_share: f64,
    /// Share of wall time spent inside CUDA calls.
    pub cuda_api_share: f64,
    /// How solid the figures are.
    pub basis: String,
}

/// Estimates for every GPU-driving root process, most CUDA time first.
pub fn starvation_of(ds: &Dataset) -> Vec<StarvationEstimate> {
    let (mains, _) = main_processes(ds);
    mains.iter().filter_map(|pid| one(ds, *pid)).collect()
}

fn one(ds: &Dataset, pid: i32) -> Option<StarvationEstimate> {
    let tid = ds.gpu_thread(pid)?;
    let thread_calls = || ds.calls.iter().filter(|c| c.pid == pid && c.tid == tid);
    // Under call folding the raw rows are a sample: the thread's activity
    // spans hold every outer call.
    let spans = ds
        .per_thread_from_spans()
        .then(|| ds.thread_calls(pid, tid))
        .flatten();
    let first = match spans {
        Some(s) => s.first_ns,
        None => thread_calls().map(|c| c.ts_ns).min()?,
    };
    let last = match spans {
        Some(s) => s.last_ns,
        None => thread_calls().map(|c| c.ts_ns + c.dur_ns).max()?,
    };
    let wall = (last - first).max(1);
    // API time from totals when the recorder sampled raw rows.
    // Nested calls (the driver half of a runtime call) are inside their
    // outer call already: every time below counts outer calls once.
    let agg = ds.totals(AggSource::Cuda, None, Some(pid));
    let outer_total: i64 = ds
        .aggs
        .iter()
        .filter(|a| a.source == AggSource::Cuda && a.pid == pid)
        .map(|a| a.outer_dur_ns())
        .sum();
    let raw_tid_time: i64 = ds
        .calls
        .iter()
        .filter(|c| c.pid == pid && c.tid == tid && !c.nested)
        .map(|c| c.dur_ns)
        .sum();
    let raw_pid_time: i64 = ds
        .calls
        .iter()
        .filter(|c| c.pid == pid && !c.nested)
        .map(|c| c.dur_ns)
        .sum();
    let sampled = agg.count > agg.stored;
    let api = if let Some(s) = spans {
        s.api_ns
    } else if sampled && raw_pid_time > 0 {
        // Scale the thread's raw time by how much the totals exceed the raw rows.
        (raw_tid_time as f64 * outer_total as f64 / raw_pid_time as f64) as i64
    } else {
        raw_tid_time
    }
    .min(wall);
    let sync: i64 = match spans {
        Some(s) => s.sync_ns,
        None => ds
            .calls
            .iter()
            .filter(|c| {
                c.pid == pid && c.tid == tid && !c.nested && ds.op_class(c.op_id) == OpClass::Sync
            })
            .map(|c| c.dur_ns)
            .sum::<i64>(),
    }
    .min(wall);
    let mut off = 0i64;
    let mut switches = 0i64;
    let (mut preempt, mut rq_wait, mut flagged) = (0i64, 0i64, 0i64);
    for h in ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.pid == pid && h.tid == tid && h.ts_ns >= first && h.ts_ns <= last)
    {
        let d = h.dur_ns.min(last - h.ts_ns).max(0);
        off += d;
        switches += 1;
        if h.arg >= 0 {
            flagged += 1;
        }
        if h.arg == 1 {
            preempt += 1;
            rq_wait += d;
        }
    }
    let known = switches > 0 && flagged == switches;
    let off_raw = off;
    let off = off.min(wall - api).max(0);
    // Off-CPU stretches can overlap CUDA calls (preempted inside a call); the
    // breakdown counts only what fits outside them, and scales the run-queue
    // share the same way so the parts stay consistent.
    let rq_wait = if off_raw > 0 {
        (rq_wait as f64 * off as f64 / off_raw as f64) as i64
    } else {
        0
    };
    let host = (wall - api - off).max(0);
    let pid_switches = ds.host_totals(HostKind::SchedSwitch, Some(pid));
    // Counted between the thread's first and last CUDA call (the stretch
    // this estimate covers), so they can be below the thread's whole-window
    // figures elsewhere in the report: said here.
    let mut basis = format!(
        "thread {tid}, from its first to its last CUDA call: {} CUDA calls kept as raw rows, {} \
         context switches (raw rows)",
        crate::format::count(
            ds.calls
                .iter()
                .filter(|c| c.pid == pid && c.tid == tid)
                .count() as i64
        ),
        crate::format::count(switches)
    );
    if let Some(s) = spans {
        basis.push_str(&format!(
            "; calls folded by the recorder: CUDA and sync time from the thread's activity spans \
             ({} outer calls)",
            s.calls
        ));
    } else if sampled {
        basis.push_str("; CUDA time scaled to the recorder's totals (raw calls were sampled)");
    }
    if pid_switches.count > pid_switches.stored {
        basis.push_str(
            "; some context switches were not kept as raw rows, so off-CPU time is a lower bound",
        );
    }
    Some(StarvationEstimate {
        pid,
        comm: ds.comm(pid).to_string(),
        gpu_thread: tid,
        wall_ns: wall,
        cuda_api_ns: api,
        sync_wait_ns: sync,
        off_cpu_ns: off,
        off_cpu_switches: switches,
        preemptions: known.then_some(preempt),
        run_queue_wait_ns: known.then_some(rq_wait),
        host_compute_ns: host,
        starved_share: (wall - api) as f64 / wall as f64,
        off_cpu_share: off as f64 / wall as f64,
        cuda_api_share: api as f64 / wall as f64,
        basis,
    })
}
