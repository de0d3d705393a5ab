//! OTLP trace payloads: per GPU-driving process one trace whose root span
//! covers its recorded activity, with a child span per raw CUDA call and per
//! off-CPU interval of its GPU thread, and the causal chains as events on the
//! root span of the process they hurt. Each process is one resource: its
//! pid, name and command line, the node it ran on (`host.name`) and its
//! ranks where known.

use super::attrs::{double, int, nanos, string};
use super::ids::{span_id, trace_id};
use super::{Identity, OtlpOptions};
use ingero_store::HostKind;
use ingero_tools::chains::ChainReport;
use ingero_tools::dataset::Dataset;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `SPAN_KIND_INTERNAL` in OTLP's enum.
const SPAN_KIND_INTERNAL: i64 = 1;
const TAG_ROOT: i64 = 1;
const TAG_CALL: i64 = 2;
const TAG_OFF_CPU: i64 = 3;

/// Builds the `/v1/traces` request bodies, at most `opts.batch` spans each.
pub fn trace_requests(
    ds: &Dataset,
    chains: &ChainReport,
    who: &Identity,
    opts: &OtlpOptions,
) -> Vec<Value> {
    let origin = ds.span.start_ns;
    let mut per_pid: BTreeMap<i32, Vec<Value>> = BTreeMap::new();
    let mut bounds: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    let mut widen = |pid: i32, a: i64, b: i64| {
        let e = bounds.entry(pid).or_insert((a, b));
        e.0 = e.0.min(a);
        e.1 = e.1.max(b);
    };
    for (i, c) in ds.calls.iter().enumerate() {
        let end = c.ts_ns + c.dur_ns.max(0);
        widen(c.pid, c.ts_ns, end);
        let trace = trace_id(&[origin, c.pid as i64]);
        let parent = span_id(&[origin, c.pid as i64, TAG_ROOT]);
        let op = ds.ops.get(&c.op_id);
        let mut attributes = vec![
            string("cuda.function", ds.op_name(c.op_id)),
            string("cuda.op_class", ds.op_class(c.op_id).as_str()),
            string(
                "cuda.api",
                op.map_or(ingero_store::CudaApi::Runtime, |o| o.api)
                    .as_str(),
            ),
            int("thread.id", c.tid as i64),
        ];
        if c.bytes > 0 {
            attributes.push(int("cuda.bytes", c.bytes));
        }
        if c.stream != 0 {
            attributes.push(string("cuda.stream", format!("{:#x}", c.stream)));
        }
        if c.copy_kind >= 0 {
            attributes.push(int("cuda.copy_kind", c.copy_kind as i64));
        }
        per_pid.entry(c.pid).or_default().push(json!({
            "traceId": trace,
            "spanId": span_id(&[origin, c.pid as i64, TAG_CALL, i as i64, c.ts_ns, c.tid as i64, c.op_id as i64]),
            "parentSpanId": parent,
            "name": ds.op_name(c.op_id),
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": nanos(c.ts_ns),
            "endTimeUnixNano": nanos(end),
            "attributes": attributes,
        }));
    }
    for (i, h) in ds.gpu_thread_switches.iter().enumerate() {
        if h.kind != HostKind::SchedSwitch || h.dur_ns <= 0 {
            continue;
        }
        widen(h.pid, h.ts_ns, h.ts_ns + h.dur_ns);
        let reason = match h.arg {
            1 => "preempted",
            0 => "blocked",
            _ => "unknown",
        };
        per_pid.entry(h.pid).or_default().push(json!({
            "traceId": trace_id(&[origin, h.pid as i64]),
            "spanId": span_id(&[origin, h.pid as i64, TAG_OFF_CPU, i as i64, h.ts_ns, h.tid as i64]),
            "parentSpanId": span_id(&[origin, h.pid as i64, TAG_ROOT]),
            "name": "off-CPU",
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": nanos(h.ts_ns),
            "endTimeUnixNano": nanos(h.ts_ns + h.dur_ns),
            "attributes": [int("thread.id", h.tid as i64), string("sched.reason", reason)],
        }));
    }

    let first_pid = bounds.keys().next().copied();
    let mut requests = Vec::new();
    for (pid, mut spans) in per_pid {
        let (lo, hi) = bounds.get(&pid).copied().unwrap_or((origin, origin));
        let events: Vec<Value> = chains
            .chains
            .iter()
            .filter(|c| c.victim_pid.or(first_pid) == Some(pid))
            .map(|c| {
                let at = origin + (c.start_offset_s * 1e9) as i64;
                json!({
                    "timeUnixNano": nanos(at.clamp(lo, hi)),
                    "name": format!("causal_chain {}", c.id),
                    "attributes": [
                        string("ingero.chain.id", c.id.clone()),
                        string("ingero.chain.cause", c.cause.name()),
                        string("ingero.chain.severity", c.severity.label()),
                        double("ingero.chain.score", c.score),
                        string("ingero.chain.summary", c.summary.clone()),
                        string("ingero.chain.root_cause", c.root_cause.clone()),
                        string("ingero.chain.fix", c.fix.clone()),
                        double("ingero.chain.start_offset_s", c.start_offset_s),
                        double("ingero.chain.end_offset_s", c.end_offset_s),
                    ],
                })
            })
            .collect();
        let comm = ds.comm(pid);
        let root = json!({
            "traceId": trace_id(&[origin, pid as i64]),
            "spanId": span_id(&[origin, pid as i64, TAG_ROOT]),
            "name": format!("{} [{}] CUDA activity", if comm.is_empty() { "process" } else { comm }, pid),
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": nanos(lo),
            "endTimeUnixNano": nanos(hi),
            "attributes": [int("process.pid", pid as i64)],
            "events": events,
        });
        spans.insert(0, root);
        let mut resource = super::resource(ds, opts, who.node_of(pid));
        resource.push(int("process.pid", pid as i64));
        resource.extend(who.ranks_of(pid).attributes());
        if !comm.is_empty() {
            resource.push(string("process.executable.name", comm));
        }
        if let Some(cmd) = ds.processes.get(&pid).map(|p| p.cmdline.as_str()) {
            if !cmd.is_empty() {
                resource.push(string("process.command_line", cmd));
            }
        }
        for chunk in spans.chunks(opts.batch.max(1)) {
            requests.push(json!({
                "resourceSpans": [{
                    "resource": { "attributes": resource },
                    "scopeSpans": [{ "scope": super::scope(), "spans": chunk }],
                }]
            }));
        }
    }
    requests
}

/// Spans carried by trace request bodies.
pub fn span_count(requests: &[Value]) -> usize {
    requests
        .iter()
        .flat_map(|r| r["resourceSpans"].as_array().into_iter().flatten())
        .flat_map(|rs| rs["scopeSpans"].as_array().into_iter().flatten())
        .map(|ss| ss["spans"].as_array().map_or(0, Vec::len))
        .sum()
}
