//! OTLP metric payloads: the recorder's per-bucket aggregates as cumulative
//! sums (CUDA calls, time and bytes per process and op; host events, their
//! duration and bytes per process and kind: each point is the running total
//! from the series' first bucket, the temporality Prometheus-style stores
//! take) and the system samples as gauges (CPU and memory utilisation,
//! load), so dashboards a fleet already has can plot them beside everything
//! else. One resource per node: a merged file's processes keep their node.

use super::attrs::{int, nanos, string};
use super::{Identity, OtlpOptions};
use ingero_store::{AggSource, HostKind};
use ingero_tools::dataset::Dataset;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// `AGGREGATION_TEMPORALITY_CUMULATIVE` in OTLP's enum.
const CUMULATIVE: i64 = 2;

/// One sum series: (node, is CUDA, pid, op or host kind).
type SeriesKey = (String, bool, i32, i64);

/// Count, duration and bytes of one bucket of a series.
type Totals = (i64, i64, i64);

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
            json!({ "sum": { "aggregationTemporality": CUMULATIVE, "isMonotonic": true, "dataPoints": points } })
        };
        let mut m =
            json!({ "name": self.name, "unit": self.unit, "description": self.description });
        if let (Some(m), Some(d)) = (m.as_object_mut(), data.as_object()) {
            m.extend(d.clone());
        }
        m
    }
}

/// The metrics of one node.
struct NodeMetrics {
    cuda_calls: Metric,
    cuda_time: Metric,
    cuda_bytes: Metric,
    host_events: Metric,
    host_time: Metric,
    host_bytes: Metric,
    cpu: Metric,
    mem: Metric,
    load: Metric,
}

impl NodeMetrics {
    fn new() -> NodeMetrics {
        NodeMetrics {
            cuda_calls: Metric::new("ingero.cuda.calls", "{call}", "CUDA API calls", false),
            cuda_time: Metric::new(
                "ingero.cuda.duration",
                "ns",
                "Time inside CUDA API calls",
                false,
            ),
            cuda_bytes: Metric::new(
                "ingero.cuda.bytes",
                "By",
                "Bytes copied or allocated by CUDA calls",
                false,
            ),
            host_events: Metric::new(
                "ingero.host.events",
                "{event}",
                "Kernel events (sched_switch, mm_page_alloc, fork...)",
                false,
            ),
            host_time: Metric::new(
                "ingero.host.duration",
                "ns",
                "Duration carried by kernel events (off-CPU time after sched_switch)",
                false,
            ),
            host_bytes: Metric::new(
                "ingero.host.bytes",
                "By",
                "Bytes covered by kernel events (page allocations)",
                false,
            ),
            cpu: Metric::new(
                "system.cpu.utilization",
                "1",
                "Busy CPU share of the traced host",
                true,
            ),
            mem: Metric::new(
                "system.memory.utilization",
                "1",
                "Used memory share of the traced host",
                true,
            ),
            load: Metric::new(
                "system.cpu.load_average.1m",
                "{thread}",
                "One-minute load average",
                true,
            ),
        }
    }

    fn all(self) -> [Metric; 9] {
        [
            self.cuda_calls,
            self.cuda_time,
            self.cuda_bytes,
            self.host_events,
            self.host_time,
            self.host_bytes,
            self.cpu,
            self.mem,
            self.load,
        ]
    }
}

/// Builds the `/v1/metrics` request bodies, at most `opts.batch` data points
/// each, one resource (node) per body.
pub fn metric_requests(ds: &Dataset, who: &Identity, opts: &OtlpOptions) -> Vec<Value> {
    let bucket = ds.bucket_ns.max(1);
    // Sum aggregate rows that share a bucket, process and code.
    let mut series: BTreeMap<SeriesKey, BTreeMap<i64, Totals>> = BTreeMap::new();
    for a in &ds.aggs {
        if ds
            .focus
            .is_some_and(|f| f != a.pid && !ds.descends_from(a.pid, f))
        {
            continue;
        }
        let key = (
            who.node_of(a.pid).to_string(),
            a.source == AggSource::Cuda,
            a.pid,
            a.code,
        );
        let e = series
            .entry(key)
            .or_default()
            .entry(a.bucket_ns)
            .or_default();
        e.0 += a.count;
        e.1 = e.1.saturating_add(a.sum_dur_ns);
        e.2 = e.2.saturating_add(a.sum_bytes);
    }
    let mut nodes: BTreeMap<String, NodeMetrics> = BTreeMap::new();
    for ((node, is_cuda, pid, code), buckets) in series {
        let m = nodes.entry(node).or_insert_with(NodeMetrics::new);
        let what = if is_cuda {
            string("cuda.function", ds.op_name(code as u16))
        } else {
            string(
                "event",
                HostKind::from_id(code).map_or("unknown", |k| k.name()),
            )
        };
        let mut attributes = vec![int("process.pid", pid as i64), what];
        attributes.extend(who.ranks_of(pid).attributes());
        let start = buckets.keys().next().copied().unwrap_or_default();
        let point = |v: i64, b: i64| {
            json!({
                "attributes": attributes,
                "startTimeUnixNano": nanos(start),
                "timeUnixNano": nanos(b + bucket),
                "asInt": v.to_string(),
            })
        };
        let (calls, time, bytes) = if is_cuda {
            (&mut m.cuda_calls, &mut m.cuda_time, &mut m.cuda_bytes)
        } else {
            (&mut m.host_events, &mut m.host_time, &mut m.host_bytes)
        };
        let mut total: Totals = (0, 0, 0);
        for (b, (count, dur, byte)) in buckets {
            total.0 += count;
            total.1 = total.1.saturating_add(dur);
            total.2 = total.2.saturating_add(byte);
            calls.points.push(point(total.0, b));
            // Host events carry no duration or bytes of their own until one does.
            if is_cuda || total.1 > 0 {
                time.points.push(point(total.1, b));
            }
            if total.2 > 0 {
                bytes.points.push(point(total.2, b));
            }
        }
    }
    let m = nodes
        .entry(who.capture_node().to_string())
        .or_insert_with(NodeMetrics::new);
    for s in &ds.snapshots {
        let gauge = |v: f64| json!({ "timeUnixNano": nanos(s.ts_ns), "asDouble": v });
        m.cpu.points.push(gauge(s.cpu_pct / 100.0));
        m.mem.points.push(gauge(s.mem_used_pct / 100.0));
        m.load.points.push(gauge(s.load1));
    }

    let batch = opts.batch.max(1);
    let mut requests = Vec::new();
    for (node, metrics) in nodes {
        let resource = super::resource(ds, opts, &node);
        let mut current: Vec<Value> = Vec::new();
        let mut room = batch;
        for m in &metrics.all() {
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
