//! OTLP metric payloads: the recorder's per-bucket aggregates as delta sums
//! (CUDA calls, time and bytes per process and op; host events, their
//! duration and bytes per process and kind) and the system samples as
//! gauges (CPU and memory utilisation, load), so dashboards a fleet already
//! has can plot them beside everything else.

use super::attrs::{int, nanos, string};
use super::OtlpOptions;
use ingero_store::{AggSource, HostKind};
use ingero_tools::dataset::Dataset;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `AGGREGATION_TEMPORALITY_DELTA` in OTLP's enum.
const DELTA: i64 = 1;

/// Aggregate rows summed per (is CUDA, bucket start, pid, op or host kind).
type SumKey = (bool, i64, i32, i64);

/// A metric being assembled: its header and its data points.
struct Metric {
    name: &'static str,
    unit: &'static str,
    description: &'static str,
    gauge: bool,
    points: Vec<Value>,
}

impl Metric {
    fn new(
        name: &'static str,
        unit: &'static str,
        description: &'static str,
        gauge: bool,
    ) -> Metric {
        Metric {
            name,
            unit,
            description,
            gauge,
            points: Vec::new(),
        }
    }

    fn with_points(&self, points: &[Value]) -> Value {
        let data = if self.gauge {
            json!({ "gauge": { "dataPoints": points } })
        } else {
            json!({ "sum": { "aggregationTemporality": DELTA, "isMonotonic": true, "dataPoints": points } })
        };
        let mut m =
            json!({ "name": self.name, "unit": self.unit, "description": self.description });
        if let (Some(m), Some(d)) = (m.as_object_mut(), data.as_object()) {
            m.extend(d.clone());
        }
        m
    }
}

/// Builds the `/v1/metrics` request bodies, at most `opts.batch` data points each.
pub fn metric_requests(ds: &Dataset, opts: &OtlpOptions) -> Vec<Value> {
    let mut cuda_calls = Metric::new(
        "ingero.cuda.calls",
        "{call}",
        "CUDA API calls per aggregate bucket",
        false,
    );
    let mut cuda_time = Metric::new(
        "ingero.cuda.duration",
        "ns",
        "Time inside CUDA API calls",
        false,
    );
    let mut cuda_bytes = Metric::new(
        "ingero.cuda.bytes",
        "By",
        "Bytes copied or allocated by CUDA calls",
        false,
    );
    let mut host_events = Metric::new(
        "ingero.host.events",
        "{event}",
        "Kernel events (sched_switch, mm_page_alloc, fork...)",
        false,
    );
    let mut host_time = Metric::new(
        "ingero.host.duration",
        "ns",
        "Duration carried by kernel events (off-CPU time after sched_switch)",
        false,
    );
    let mut host_bytes = Metric::new(
        "ingero.host.bytes",
        "By",
        "Bytes covered by kernel events (page allocations)",
        false,
    );
    let mut cpu = Metric::new(
        "system.cpu.utilization",
        "1",
        "Busy CPU share of the traced host",
        true,
    );
    let mut mem = Metric::new(
        "system.memory.utilization",
        "1",
        "Used memory share of the traced host",
        true,
    );
    let mut load = Metric::new(
        "system.cpu.load_average.1m",
        "{thread}",
        "One-minute load average",
        true,
    );

    let bucket = ds.bucket_ns.max(1);
    // Sum aggregate rows that share a bucket, process and code.
    let mut sums: BTreeMap<SumKey, (i64, i64, i64)> = BTreeMap::new();
    for a in &ds.aggs {
        if ds
            .focus
            .is_some_and(|f| f != a.pid && !ds.descends_from(a.pid, f))
        {
            continue;
        }
        let e = sums
            .entry((a.source == AggSource::Cuda, a.bucket_ns, a.pid, a.code))
            .or_default();
        e.0 += a.count;
        e.1 = e.1.saturating_add(a.sum_dur_ns);
        e.2 = e.2.saturating_add(a.sum_bytes);
    }
    for ((is_cuda, b, pid, code), (count, dur, bytes)) in sums {
        let point = |v: i64, what: Value| {
            json!({
                "attributes": [int("process.pid", pid as i64), what],
                "startTimeUnixNano": nanos(b),
                "timeUnixNano": nanos(b + bucket),
                "asInt": v.to_string(),
            })
        };
        if is_cuda {
            let op = || string("cuda.function", ds.op_name(code as u16));
            cuda_calls.points.push(point(count, op()));
            cuda_time.points.push(point(dur, op()));
            if bytes > 0 {
                cuda_bytes.points.push(point(bytes, op()));
            }
        } else {
            let name = HostKind::from_id(code).map_or("unknown", |k| k.name());
            host_events.points.push(point(count, string("event", name)));
            if dur > 0 {
                host_time.points.push(point(dur, string("event", name)));
            }
            if bytes > 0 {
                host_bytes.points.push(point(bytes, string("event", name)));
            }
        }
    }
    for s in &ds.snapshots {
        let gauge = |v: f64| json!({ "timeUnixNano": nanos(s.ts_ns), "asDouble": v });
        cpu.points.push(gauge(s.cpu_pct / 100.0));
        mem.points.push(gauge(s.mem_used_pct / 100.0));
        load.points.push(gauge(s.load1));
    }

    let metrics = [
        cuda_calls,
        cuda_time,
        cuda_bytes,
        host_events,
        host_time,
        host_bytes,
        cpu,
        mem,
        load,
    ];
    let resource = super::resource(ds, opts);
    let batch = opts.batch.max(1);
    let mut requests = Vec::new();
    let mut current: Vec<Value> = Vec::new();
    let mut room = batch;
    for m in &metrics {
        let mut rest: &[Value] = &m.points;
        while !rest.is_empty() {
            let take = rest.len().min(room);
            current.push(m.with_points(&rest[..take]));
            rest = &rest[take..];
            room -= take;
            if room == 0 {
                requests.push(wrap(&resource, std::mem::take(&mut current)));
                room = batch;
            }
        }
    }
    if !current.is_empty() {
        requests.push(wrap(&resource, current));
    }
    requests
}

fn wrap(resource: &[Value], metrics: Vec<Value>) -> Value {
    json!({
        "resourceMetrics": [{
            "resource": { "attributes": resource },
            "scopeMetrics": [{ "scope": super::scope(), "metrics": metrics }],
        }]
    })
}

/// Data points carried by metric request bodies.
pub fn point_count(requests: &[Value]) -> usize {
    requests
        .iter()
        .flat_map(|r| r["resourceMetrics"].as_array().into_iter().flatten())
        .flat_map(|rm| rm["scopeMetrics"].as_array().into_iter().flatten())
        .flat_map(|sm| sm["metrics"].as_array().into_iter().flatten())
        .map(|m| {
            let data = if m.get("gauge").is_some() {
                &m["gauge"]
            } else {
                &m["sum"]
            };
            data["dataPoints"].as_array().map_or(0, Vec::len)
        })
        .sum()
}
