//! Chrome trace-event JSON (the `traceEvents` format), which ui.perfetto.dev
//! and chrome://tracing open directly: every raw CUDA call as a complete
//! event on its thread, the off-CPU intervals of GPU-driving threads and the
//! GPU-idle gaps on tracks beside it, CPU use and page-allocation rate as
//! counters, the GPU's own NVML samples as counters (device SM % and
//! memory-controller %, memory used, power, SM clock, PCIe on one pseudo
//! process per GPU; per-process SM % on each process), and the causal chains
//! as spans and global markers. Engineers
//! already know these viewers; this puts the trace where they look.
//!
//! Timestamps are microseconds after the capture start (the capture start in
//! epoch nanoseconds is in `otherData`). Driver-API calls get their own track
//! so they nest cleanly beside the runtime calls that issue them.

use crate::error::Result;
use ingero_store::{AggSource, CudaApi, HostKind};
use ingero_tools::chains::ChainReport;
use ingero_tools::dataset::Dataset;
use ingero_tools::gpu_activity::clip;
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// Pseudo process holding system-wide counters (above any Linux pid).
pub const SYSTEM_PID: i64 = 1 << 30;
/// Pseudo process holding one track per causal chain.
pub const CHAINS_PID: i64 = SYSTEM_PID + 1;
/// Added to a thread id for the track of its driver-API calls.
pub const DRIVER_TID_BASE: i64 = 1_000_000_000;
/// Added to a thread id for the track of its off-CPU intervals.
pub const OFF_CPU_TID_BASE: i64 = 2_000_000_000;
/// Added to a process id for the track of its GPU-idle gaps.
pub const GPU_IDLE_TID_BASE: i64 = 3_000_000_000;
/// Pseudo process of GPU `n`'s NVML counters is `GPU_PID_BASE + n`.
pub const GPU_PID_BASE: i64 = SYSTEM_PID + 16;

/// One trace event. Which fields are present depends on the phase `ph`:
/// `X` (complete: `dur`), `C` (counter: numeric `args`), `i` (instant: `s`
/// scope), `M` (metadata: `args.name`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceEvent {
    /// Event name (op, counter or metadata key).
    pub name: String,
    /// Comma-separated categories, for filtering in the viewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cat: Option<String>,
    /// Phase: `X`, `C`, `i` or `M`.
    pub ph: &'static str,
    /// Start, microseconds after the capture start.
    pub ts: f64,
    /// Duration in microseconds (complete events only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dur: Option<f64>,
    /// Process (or pseudo process) id.
    pub pid: i64,
    /// Thread (or pseudo thread) id.
    pub tid: i64,
    /// Instant scope (`g` for global).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub s: Option<&'static str>,
    /// Details shown when the event is selected; counter values for `C`.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub args: Value,
}

/// A whole trace file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceFile {
    /// Metadata first, then every other event in time order.
    #[serde(rename = "traceEvents")]
    pub trace_events: Vec<TraceEvent>,
    /// Unit the viewer shows durations in.
    #[serde(rename = "displayTimeUnit")]
    pub display_time_unit: &'static str,
    /// Where the trace came from.
    #[serde(rename = "otherData")]
    pub other_data: Value,
}

/// Builds the trace-event file for a loaded dataset and its chains.
pub fn trace_of(ds: &Dataset, chains: &ChainReport) -> TraceFile {
    let origin = ds.span.start_ns;
    let us = |ns: i64| (ns - origin) as f64 / 1e3;
    let mut meta: Vec<TraceEvent> = Vec::new();
    let mut events: Vec<TraceEvent> = Vec::new();
    let mut pids: BTreeSet<i64> = BTreeSet::new();
    let mut threads: BTreeMap<(i64, i64), String> = BTreeMap::new();

    for c in &ds.calls {
        let driver = ds
            .ops
            .get(&c.op_id)
            .is_some_and(|o| o.api == CudaApi::Driver);
        let tid = if driver {
            DRIVER_TID_BASE + c.tid as i64
        } else {
            c.tid as i64
        };
        threads.entry((c.pid as i64, tid)).or_insert_with(|| {
            if driver {
                format!("tid {} CUDA driver API", c.tid)
            } else {
                format!("tid {} CUDA runtime", c.tid)
            }
        });
        pids.insert(c.pid as i64);
        let mut args = Map::new();
        if c.bytes > 0 {
            args.insert("bytes".into(), json!(c.bytes));
        }
        if c.stream != 0 {
            args.insert("stream".into(), json!(format!("{:#x}", c.stream)));
        }
        if c.copy_kind >= 0 {
            args.insert("copy_kind".into(), json!(c.copy_kind));
        }
        args.insert("tid".into(), json!(c.tid));
        events.push(TraceEvent {
            name: ds.op_name(c.op_id).to_string(),
            cat: Some(format!("cuda,{}", ds.op_class(c.op_id).as_str())),
            ph: "X",
            ts: us(c.ts_ns),
            dur: Some(c.dur_ns.max(0) as f64 / 1e3),
            pid: c.pid as i64,
            tid,
            s: None,
            args: Value::Object(args),
        });
    }

    for h in &ds.gpu_thread_switches {
        if h.kind != HostKind::SchedSwitch || h.dur_ns <= 0 {
            continue;
        }
        let tid = OFF_CPU_TID_BASE + h.tid as i64;
        threads
            .entry((h.pid as i64, tid))
            .or_insert_with(|| format!("tid {} off-CPU", h.tid));
        pids.insert(h.pid as i64);
        let name = match h.arg {
            1 => "off-CPU (preempted)",
            0 => "off-CPU (blocked)",
            _ => "off-CPU",
        };
        events.push(TraceEvent {
            name: name.to_string(),
            cat: Some("sched".into()),
            ph: "X",
            ts: us(h.ts_ns),
            dur: Some(h.dur_ns as f64 / 1e3),
            pid: h.pid as i64,
            tid,
            s: None,
            args: json!({ "tid": h.tid }),
        });
    }

    for idle in &chains.gpu_idle {
        let tid = GPU_IDLE_TID_BASE + idle.pid as i64;
        for g in &idle.longest_gaps {
            threads
                .entry((idle.pid as i64, tid))
                .or_insert_with(|| "GPU idle gaps".to_string());
            pids.insert(idle.pid as i64);
            events.push(TraceEvent {
                name: "GPU idle".into(),
                cat: Some("gpu_idle".into()),
                ph: "X",
                ts: g.start_offset_s * 1e6,
                dur: Some(g.dur_ns as f64 / 1e3),
                pid: idle.pid as i64,
                tid,
                s: None,
                args: json!({
                    "host_wait_share_of_process": idle.idle_share,
                    "busy_source": idle.busy_source,
                }),
            });
        }
    }

    // Counters: CPU use, and page allocations per second per process and in all.
    for s in &ds.snapshots {
        events.push(counter(
            "CPU %",
            us(s.ts_ns),
            SYSTEM_PID,
            json!({ "cpu": s.cpu_pct }),
        ));
        events.push(counter(
            "memory used %",
            us(s.ts_ns),
            SYSTEM_PID,
            json!({ "mem": s.mem_used_pct }),
        ));
    }
    let bucket = ds.bucket_ns.max(1);
    let mut per_pid: BTreeMap<i64, BTreeMap<i64, i64>> = BTreeMap::new();
    let page = HostKind::PageAlloc.id() as i64;
    for a in &ds.aggs {
        if a.source == AggSource::Host && a.code == page && a.count > 0 {
            *per_pid
                .entry(a.pid as i64)
                .or_default()
                .entry(a.bucket_ns)
                .or_default() += a.count;
            *per_pid
                .entry(SYSTEM_PID)
                .or_default()
                .entry(a.bucket_ns)
                .or_default() += a.count;
        }
    }
    for (pid, buckets) in &per_pid {
        if *pid != SYSTEM_PID {
            pids.insert(*pid);
        }
        let mut prev_end: Option<i64> = None;
        for (b, n) in buckets {
            if prev_end.is_some_and(|e| e < *b) {
                if let Some(e) = prev_end {
                    events.push(counter(
                        "page allocs/s",
                        us(e),
                        *pid,
                        json!({ "rate": 0.0 }),
                    ));
                }
            }
            let rate = *n as f64 * 1e9 / bucket as f64;
            // A bucket may start before the capture did: draw it from the start.
            events.push(counter(
                "page allocs/s",
                us((*b).max(origin)),
                *pid,
                json!({ "rate": rate }),
            ));
            prev_end = Some(b + bucket);
        }
        if let Some(e) = prev_end {
            events.push(counter(
                "page allocs/s",
                us(e),
                *pid,
                json!({ "rate": 0.0 }),
            ));
        }
    }

    let gpu_pids = gpu_counters(ds, &mut events, &mut pids);

    // Causal chains: one track each, plus a global marker where each starts.
    for (i, c) in chains.chains.iter().enumerate() {
        let evidence: Map<String, Value> = c
            .evidence
            .iter()
            .map(|e| (e.label.clone(), json!(format!("{} {}", e.value, e.unit))))
            .collect();
        let args = json!({
            "summary": c.summary,
            "root_cause": c.root_cause,
            "fix": c.fix,
            "score": c.score,
            "victim_pid": c.victim_pid,
            "culprit_pids": c.culprit_pids,
            "affected_ops": c.affected_ops,
            "evidence": evidence,
        });
        let tid = i as i64 + 1;
        threads.insert((CHAINS_PID, tid), format!("{} {}", c.id, c.cause.name()));
        let start = c.start_offset_s * 1e6;
        let end = (c.end_offset_s * 1e6).max(start);
        events.push(TraceEvent {
            name: format!("{} [{}] {}", c.id, c.severity.label(), c.cause.name()),
            cat: Some("causal_chain".into()),
            ph: "X",
            ts: start,
            dur: Some(end - start),
            pid: CHAINS_PID,
            tid,
            s: None,
            args: args.clone(),
        });
        events.push(TraceEvent {
            name: format!("{}: {}", c.id, c.summary),
            cat: Some("causal_chain".into()),
            ph: "i",
            ts: start,
            dur: None,
            pid: CHAINS_PID,
            tid,
            s: Some("g"),
            args: json!({ "chain": c.id }),
        });
    }

    // Names for every process and thread that carries events.
    let mut name_process = |pid: i64, name: String, sort: i64| {
        meta.push(metadata("process_name", pid, 0, json!({ "name": name })));
        meta.push(metadata(
            "process_sort_index",
            pid,
            0,
            json!({ "sort_index": sort }),
        ));
    };
    name_process(SYSTEM_PID, "host (system counters)".into(), -2);
    for (pid, name) in &gpu_pids {
        name_process(*pid, name.clone(), -3);
    }
    if !chains.chains.is_empty() {
        name_process(CHAINS_PID, "causal chains".into(), -1);
    }
    for pid in &pids {
        let comm = ds.comm(*pid as i32);
        let name = if comm.is_empty() {
            format!("pid {pid}")
        } else {
            format!("{comm} [{pid}]")
        };
        name_process(*pid, name, *pid);
    }
    for ((pid, tid), name) in &threads {
        meta.push(metadata("thread_name", *pid, *tid, json!({ "name": name })));
        meta.push(metadata(
            "thread_sort_index",
            *pid,
            *tid,
            json!({ "sort_index": tid }),
        ));
    }

    events.sort_by(|a, b| {
        a.ts.total_cmp(&b.ts)
            .then_with(|| b.dur.unwrap_or(0.0).total_cmp(&a.dur.unwrap_or(0.0)))
    });
    nest_complete_events(&mut events);
    meta.extend(events);
    TraceFile {
        trace_events: meta,
        display_time_unit: "ns",
        other_data: json!({
            "generator": format!("ingero {}", env!("CARGO_PKG_VERSION")),
            "capture_start_ns": ds.span.start_ns,
            "capture_end_ns": ds.span.end_ns,
            "window_start_ns": ds.window.lo_ns,
            "window_end_ns": ds.window.hi_ns,
            "gpu_model": ds.gpu_model,
        }),
    }
}

/// Viewers need complete events on one track to nest or follow each other;
/// recorded intervals sometimes overlap by a few microseconds (clock skew
/// between probes). Such an event is clipped to end with the one it starts
/// in, and keeps its recorded duration in `args.recorded_dur_us`. Expects
/// `events` sorted by start, longest first.
fn nest_complete_events(events: &mut [TraceEvent]) {
    let mut open: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    for e in events.iter_mut().filter(|e| e.ph == "X") {
        let Some(dur) = e.dur else { continue };
        let stack = open.entry((e.pid, e.tid)).or_default();
        while stack.last().is_some_and(|end| *end <= e.ts) {
            stack.pop();
        }
        let mut end = e.ts + dur;
        if let Some(parent_end) = stack.last().copied() {
            if end > parent_end {
                end = parent_end;
                e.dur = Some(parent_end - e.ts);
                if let Value::Object(args) = &mut e.args {
                    args.insert("recorded_dur_us".into(), json!(dur));
                }
            }
        }
        stack.push(end);
    }
}

/// Writes the trace-event JSON of `ds` to `out`.
pub fn write_trace(ds: &Dataset, chains: &ChainReport, out: impl Write) -> Result<()> {
    serde_json::to_writer(out, &trace_of(ds, chains))?;
    Ok(())
}

/// NVML counters: per GPU a pseudo process with device SM % and
/// memory-controller % (each value from the start of the sample period it
/// describes), memory used, power, SM clock and PCIe throughput (polled);
/// per process its own SM % on its own track. Values the device could not
/// report are left out, never drawn as 0. Returns the GPU pseudo processes
/// with their names.
fn gpu_counters(
    ds: &Dataset,
    events: &mut Vec<TraceEvent>,
    pids: &mut BTreeSet<i64>,
) -> Vec<(i64, String)> {
    let g = &ds.gpu;
    let origin = ds.span.start_ns;
    let win = (ds.window.lo_ns.max(origin), ds.window.hi_ns);
    let us = |ns: i64| (ns - origin) as f64 / 1e3;
    let inside = |ts: i64| ts >= win.0 && ts <= win.1;
    let in_scope = |pid: i32| {
        ds.focus
            .is_none_or(|f| pid == f || ds.descends_from(pid, f))
    };
    let mut gpus: BTreeSet<u32> = g.sm.keys().copied().collect();
    gpus.extend(g.memory.keys());
    gpus.extend(g.process.iter().map(|s| s.gpu));
    gpus.extend(g.status.iter().map(|s| s.gpu));
    let mut named = Vec::new();
    for gpu in gpus {
        let pid = GPU_PID_BASE + gpu as i64;
        let model = g
            .devices
            .iter()
            .find(|d| d.gpu == gpu)
            .map(|d| d.name.clone())
            .filter(|n| !n.is_empty());
        named.push((
            pid,
            match model {
                Some(m) => format!("GPU {gpu} {m} (NVML)"),
                None => format!("GPU {gpu} (NVML)"),
            },
        ));
        for p in clip(&g.device_periods(gpu), win) {
            events.push(counter(
                "SM %",
                us(p.start_ns),
                pid,
                json!({ "sm": p.busy * 100.0 }),
            ));
        }
        for s in g.memory.get(&gpu).into_iter().flatten() {
            if inside(s.ts_ns) {
                events.push(counter(
                    "memory-controller %",
                    us(s.ts_ns),
                    pid,
                    json!({ "mem": s.value }),
                ));
            }
        }
        for s in g.status.iter().filter(|s| s.gpu == gpu && inside(s.ts_ns)) {
            let ts = us(s.ts_ns);
            if s.mem_used_bytes >= 0 {
                events.push(counter(
                    "memory used MiB",
                    ts,
                    pid,
                    json!({ "used": s.mem_used_bytes as f64 / (1u64 << 20) as f64 }),
                ));
            }
            if s.power_mw >= 0 {
                events.push(counter(
                    "power W",
                    ts,
                    pid,
                    json!({ "power": s.power_mw as f64 / 1000.0 }),
                ));
            }
            if s.sm_clock_mhz >= 0 {
                events.push(counter(
                    "SM clock MHz",
                    ts,
                    pid,
                    json!({ "clock": s.sm_clock_mhz }),
                ));
            }
            let mut pcie = Map::new();
            if s.pcie_rx_kbps >= 0 {
                pcie.insert("rx".into(), json!(s.pcie_rx_kbps as f64 / 1000.0));
            }
            if s.pcie_tx_kbps >= 0 {
                pcie.insert("tx".into(), json!(s.pcie_tx_kbps as f64 / 1000.0));
            }
            if !pcie.is_empty() {
                events.push(counter("PCIe MB/s", ts, pid, Value::Object(pcie)));
            }
        }
        let procs: BTreeSet<i32> = g
            .process
            .iter()
            .filter(|s| s.gpu == gpu && in_scope(s.pid))
            .map(|s| s.pid)
            .collect();
        let name = format!("GPU {gpu} SM %");
        for p in procs {
            let periods = clip(&g.process_periods(p, gpu), win);
            if periods.is_empty() {
                continue;
            }
            pids.insert(p as i64);
            for q in periods {
                events.push(counter(
                    &name,
                    us(q.start_ns),
                    p as i64,
                    json!({ "sm": q.busy * 100.0 }),
                ));
            }
        }
    }
    named
}

fn counter(name: &str, ts: f64, pid: i64, args: Value) -> TraceEvent {
    TraceEvent {
        name: name.to_string(),
        cat: Some("counter".into()),
        ph: "C",
        ts,
        dur: None,
        pid,
        tid: 0,
        s: None,
        args,
    }
}

fn metadata(name: &str, pid: i64, tid: i64, args: Value) -> TraceEvent {
    TraceEvent {
        name: name.to_string(),
        cat: None,
        ph: "M",
        ts: 0.0,
        dur: None,
        pid,
        tid,
        s: None,
        args,
    }
}
