//! OTLP/HTTP export against a local receiver: the JSON bodies decode into
//! the OTLP structure (resource -> scope -> spans / metrics, hex ids, string
//! nanosecond times, typed attribute values), carry one span per raw CUDA
//! call and off-CPU interval, keep their ids from one export to the next,
//! and failures say whether the receiver was down or said no.

mod common;

use common::receiver::{Received, Receiver};
use ingero_report::otlp::{self, Identity, OtlpOptions, Protocol};
use ingero_report::ReportError;
use ingero_store::HostKind;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

fn options(endpoint: &str, batch: usize) -> OtlpOptions {
    OtlpOptions {
        endpoint: endpoint.to_string(),
        service_name: "trainer-test".into(),
        batch,
        timeout: Duration::from_secs(5),
        ..OtlpOptions::default()
    }
}

/// The identity every seed-trace export here uses.
fn node() -> Identity {
    Identity::on_node("node-test")
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && s.chars().any(|c| c != '0')
}

fn nanos(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("nanosecond time as a decimal string: {v}"))
}

fn check_attributes(attrs: &Value) {
    for a in attrs.as_array().expect("attributes array") {
        assert!(a["key"].as_str().is_some_and(|k| !k.is_empty()), "{a}");
        let value = a["value"].as_object().expect("value object");
        assert_eq!(value.len(), 1, "exactly one typed value: {a}");
        match value.iter().next() {
            Some((k, v)) if k == "stringValue" => assert!(v.is_string()),
            Some((k, v)) if k == "intValue" => {
                assert!(v.as_str().is_some_and(|s| s.parse::<i64>().is_ok()), "{a}")
            }
            Some((k, v)) if k == "doubleValue" => assert!(v.is_number()),
            other => panic!("unexpected value {other:?}"),
        }
    }
}

fn bodies(received: &[Received], path: &str) -> Vec<Value> {
    received
        .iter()
        .filter(|r| r.path == path)
        .map(|r| {
            assert_eq!(r.content_type, "application/json");
            serde_json::from_slice(&r.body).expect("JSON body")
        })
        .collect()
}

/// Every span of the trace bodies, checked for OTLP structure.
fn spans_of(bodies: &[Value], service: &str) -> Vec<Value> {
    let mut spans = Vec::new();
    for b in bodies {
        for rs in b["resourceSpans"].as_array().expect("resourceSpans") {
            let attrs = &rs["resource"]["attributes"];
            check_attributes(attrs);
            let svc = attrs
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["key"] == "service.name")
                .expect("service.name");
            assert_eq!(svc["value"]["stringValue"], service);
            for ss in rs["scopeSpans"].as_array().expect("scopeSpans") {
                assert_eq!(ss["scope"]["name"], "ingero");
                for s in ss["spans"].as_array().expect("spans") {
                    assert!(is_hex(s["traceId"].as_str().unwrap_or_default(), 32), "{s}");
                    assert!(is_hex(s["spanId"].as_str().unwrap_or_default(), 16), "{s}");
                    if let Some(p) = s.get("parentSpanId") {
                        assert!(is_hex(p.as_str().unwrap_or_default(), 16), "{s}");
                    }
                    assert!(s["name"].as_str().is_some_and(|n| !n.is_empty()));
                    assert!(s["kind"].as_i64().is_some_and(|k| (0..=5).contains(&k)));
                    assert!(nanos(&s["endTimeUnixNano"]) >= nanos(&s["startTimeUnixNano"]));
                    check_attributes(&s["attributes"]);
                    for e in s
                        .get("events")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        nanos(&e["timeUnixNano"]);
                        check_attributes(&e["attributes"]);
                    }
                    spans.push(s.clone());
                }
            }
        }
    }
    spans
}

#[test]
fn export_delivers_decodable_traces_and_metrics() {
    let (ds, chains) = common::seed_dataset();
    let rx = Receiver::start(200);
    let summary = otlp::export(&ds, &chains, &node(), &options(&rx.endpoint, 500)).expect("export");
    let received = rx.received();
    assert!(received
        .iter()
        .all(|r| r.path == "/v1/traces" || r.path == "/v1/metrics"));

    let traces = bodies(&received, "/v1/traces");
    assert_eq!(traces.len(), summary.trace_requests);
    assert!(traces.len() > 1, "batches of 500 spans");
    let spans = spans_of(&traces, "trainer-test");
    let off_cpu = ds
        .gpu_thread_switches
        .iter()
        .filter(|h| h.kind == HostKind::SchedSwitch && h.dur_ns > 0)
        .count();
    let roots: BTreeSet<i32> = ds
        .calls
        .iter()
        .map(|c| c.pid)
        .chain(ds.gpu_thread_switches.iter().map(|h| h.pid))
        .collect();
    assert_eq!(spans.len(), ds.calls.len() + off_cpu + roots.len());
    assert_eq!(summary.spans, spans.len());
    let cuda = spans
        .iter()
        .filter(|s| {
            s["attributes"]
                .as_array()
                .is_some_and(|a| a.iter().any(|a| a["key"] == "cuda.function"))
        })
        .count();
    assert_eq!(cuda, ds.calls.len());

    // Ids are unique and every parent exists in the same trace.
    let ids: BTreeMap<&str, &str> = spans
        .iter()
        .map(|s| {
            (
                s["spanId"].as_str().unwrap_or_default(),
                s["traceId"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(ids.len(), spans.len(), "span ids are unique");
    for s in &spans {
        if let Some(p) = s.get("parentSpanId").and_then(Value::as_str) {
            assert_eq!(ids.get(p), s["traceId"].as_str().as_ref(), "{s}");
        }
    }
    // Each chain rides on a root span as an event.
    let chain_events = spans
        .iter()
        .flat_map(|s| {
            s.get("events")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .count();
    assert_eq!(chain_events, chains.chains.len());

    let metrics = bodies(&received, "/v1/metrics");
    assert_eq!(metrics.len(), summary.metric_requests);
    let mut points = 0;
    let mut names = BTreeMap::new();
    for b in &metrics {
        for rm in b["resourceMetrics"].as_array().expect("resourceMetrics") {
            check_attributes(&rm["resource"]["attributes"]);
            for sm in rm["scopeMetrics"].as_array().expect("scopeMetrics") {
                for m in sm["metrics"].as_array().expect("metrics") {
                    let name = m["name"].as_str().expect("metric name").to_string();
                    assert!(m["unit"].is_string());
                    let data = match (m.get("gauge"), m.get("sum")) {
                        (Some(g), None) => g,
                        (None, Some(s)) => {
                            assert_eq!(s["aggregationTemporality"], 2, "cumulative");
                            assert_eq!(s["isMonotonic"], true);
                            s
                        }
                        _ => panic!("one of gauge or sum: {m}"),
                    };
                    for p in data["dataPoints"].as_array().expect("dataPoints") {
                        nanos(&p["timeUnixNano"]);
                        if let Some(start) = p.get("startTimeUnixNano") {
                            assert!(nanos(start) <= nanos(&p["timeUnixNano"]));
                        }
                        let int_ok = p
                            .get("asInt")
                            .and_then(Value::as_str)
                            .is_some_and(|s| s.parse::<i64>().is_ok());
                        let double_ok = p.get("asDouble").is_some_and(Value::is_number);
                        assert!(int_ok ^ double_ok, "{p}");
                        if let Some(a) = p.get("attributes") {
                            check_attributes(a);
                        }
                        points += 1;
                        *names.entry(name.clone()).or_insert(0) += 1;
                    }
                }
            }
        }
    }
    assert_eq!(points, summary.data_points);
    assert_eq!(
        names.get("system.cpu.utilization"),
        Some(&ds.snapshots.len())
    );
    assert!(names.get("ingero.cuda.calls").is_some_and(|n| *n > 0));
    assert!(names.get("ingero.host.events").is_some_and(|n| *n > 0));
}

#[test]
fn ids_are_the_same_on_every_export() {
    let (ds, chains) = common::seed_dataset();
    let opts = options(otlp::DEFAULT_ENDPOINT, 10_000);
    let a = otlp::traces::trace_requests(&ds, &chains, &node(), &opts);
    let b = otlp::traces::trace_requests(&ds, &chains, &node(), &opts);
    assert_eq!(a, b);
    assert_eq!(otlp::traces::span_count(&a), otlp::traces::span_count(&b));
}

#[test]
fn a_receiver_that_is_down_is_a_network_failure() {
    let (ds, chains) = common::seed_dataset();
    // Take a free port and release it: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let err = otlp::export(
        &ds,
        &chains,
        &node(),
        &options(&format!("http://127.0.0.1:{port}"), 500),
    )
    .expect_err("nothing listens");
    assert!(matches!(err, ReportError::Network { .. }), "{err}");
    assert!(!err.is_bad_input());
    assert!(err.to_string().contains("/v1/traces"), "{err}");
}

#[test]
fn a_receiver_that_refuses_is_reported_with_its_status() {
    let (ds, chains) = common::seed_dataset();
    let rx = Receiver::start(500);
    let err =
        otlp::export(&ds, &chains, &node(), &options(&rx.endpoint, 500)).expect_err("refused");
    match &err {
        ReportError::Rejected { status, body, .. } => {
            assert_eq!(*status, 500);
            assert!(body.contains("refused by test"));
        }
        other => panic!("expected a rejection, got {other}"),
    }
    assert!(!err.is_bad_input());
}

#[test]
fn malformed_endpoints_are_bad_input() {
    for bad in [
        "ftp://collector:4318",
        "127.0.0.1:4318",
        "http://",
        "http:// x",
    ] {
        let err = otlp::urls(bad).expect_err(bad);
        assert!(err.is_bad_input(), "{bad}: {err}");
    }
    let (t, m) = otlp::urls("http://collector:4318/").expect("valid");
    assert_eq!(t, "http://collector:4318/v1/traces");
    assert_eq!(m, "http://collector:4318/v1/metrics");
}

/// The attribute `key` of an attribute list, as JSON.
fn attr<'a>(attrs: &'a Value, key: &str) -> Option<&'a Value> {
    attrs
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// Every data point of metric `name` in metric bodies, with its resource.
fn points<'a>(bodies: &'a [Value], name: &str) -> Vec<(&'a Value, &'a Value)> {
    let mut out = Vec::new();
    for b in bodies {
        for rm in b["resourceMetrics"].as_array().into_iter().flatten() {
            for sm in rm["scopeMetrics"].as_array().into_iter().flatten() {
                for m in sm["metrics"].as_array().into_iter().flatten() {
                    if m["name"] != name {
                        continue;
                    }
                    let data = m.get("sum").or_else(|| m.get("gauge")).expect("data");
                    for p in data["dataPoints"].as_array().into_iter().flatten() {
                        out.push((&rm["resource"]["attributes"], p));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn cumulative_sums_end_at_the_aggregate_totals() {
    let (ds, _) = common::seed_dataset();
    let bodies =
        otlp::metrics::metric_requests(&ds, &node(), &options(otlp::DEFAULT_ENDPOINT, 300));
    // Series: per (pid, function), points in time order, running totals.
    let mut last: BTreeMap<(String, String), (u64, i64)> = BTreeMap::new();
    let mut start_of: BTreeMap<(String, String), u64> = BTreeMap::new();
    for (resource, p) in points(&bodies, "ingero.cuda.calls") {
        assert_eq!(
            attr(resource, "host.name"),
            Some(&serde_json::json!({ "stringValue": "node-test" }))
        );
        let key = (
            attr(&p["attributes"], "process.pid")
                .expect("pid")
                .to_string(),
            attr(&p["attributes"], "cuda.function")
                .expect("op")
                .to_string(),
        );
        let t = nanos(&p["timeUnixNano"]);
        let v: i64 = p["asInt"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("int");
        let start = *start_of
            .entry(key.clone())
            .or_insert(nanos(&p["startTimeUnixNano"]));
        assert_eq!(
            nanos(&p["startTimeUnixNano"]),
            start,
            "one start per series"
        );
        if let Some((t0, v0)) = last.get(&key) {
            assert!(t > *t0 && v >= *v0, "time order, running total: {p}");
        }
        last.insert(key, (t, v));
    }
    let want: i64 = ds
        .aggs
        .iter()
        .filter(|a| a.source == ingero_store::AggSource::Cuda)
        .map(|a| a.count)
        .sum();
    assert!(want > 0);
    assert_eq!(last.values().map(|(_, v)| v).sum::<i64>(), want);
}

#[test]
fn protobuf_bodies_reach_a_receiver() {
    let (ds, chains) = common::seed_dataset();
    let opts = OtlpOptions {
        protocol: Protocol::Protobuf,
        ..options(otlp::DEFAULT_ENDPOINT, 500)
    };
    // Every body of the real trace has only fields the encoder knows.
    for body in otlp::traces::trace_requests(&ds, &chains, &node(), &opts) {
        let bytes = otlp::proto::encode(otlp::proto::Request::Traces, &body).expect("traces");
        assert!(bytes.len() > 100);
    }
    for body in otlp::metrics::metric_requests(&ds, &node(), &opts) {
        otlp::proto::encode(otlp::proto::Request::Metrics, &body).expect("metrics");
    }
    let rx = Receiver::start(200);
    let sent = otlp::export(
        &ds,
        &chains,
        &node(),
        &OtlpOptions {
            endpoint: rx.endpoint.clone(),
            ..opts
        },
    )
    .expect("export");
    let got = rx.received();
    assert_eq!(got.len(), sent.trace_requests + sent.metric_requests);
    assert!(got
        .iter()
        .all(|r| r.content_type == "application/x-protobuf" && !r.body.is_empty()));
    // The service name is in every body, as a length-delimited string.
    assert!(got
        .iter()
        .all(|r| r.body.windows(12).any(|w| w == b"trainer-test")));
}

#[test]
fn only_the_chosen_signals_are_sent() {
    let (ds, chains) = common::seed_dataset();
    let rx = Receiver::start(200);
    let opts = OtlpOptions {
        traces: false,
        ..options(&rx.endpoint, 500)
    };
    let sent = otlp::export(&ds, &chains, &node(), &opts).expect("export");
    assert_eq!((sent.trace_requests, sent.spans), (0, 0));
    assert!(sent.metric_requests > 0);
    assert!(rx.received().iter().all(|r| r.path == "/v1/metrics"));
}

/// A capture on `host-a` of two processes: 100 is rank 3 (local 1) of 8 and,
/// as in a merged file, on node `gpu-7`; 200 has no rank and no node.
fn ranked_db(dir: &std::path::Path) -> std::path::PathBuf {
    use ingero_store::catalog::cuda_op_by_name;
    use ingero_store::{
        CudaCall, Event, JobPlace, ProcessInfo, RawPolicy, SessionInfo, TraceWriter,
    };
    const T0: i64 = 1_700_000_000_000_000_000;
    let path = dir.join("ranked.db");
    let info = SessionInfo {
        host: "host-a".into(),
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("writer");
    let launch = cuda_op_by_name("cudaLaunchKernel").expect("op").id;
    for pid in [100, 200] {
        w.upsert_process(&ProcessInfo {
            pid,
            ppid: 1,
            comm: "python3".into(),
            first_seen_ns: T0,
            last_seen_ns: T0 + 1_000_000_000,
            ..Default::default()
        })
        .expect("process");
    }
    w.set_job_place(
        100,
        &JobPlace {
            rank: 3,
            local_rank: 1,
            world_size: 8,
        },
    )
    .expect("place");
    let events: Vec<Event> = (0..20)
        .map(|i| {
            Event::Cuda(CudaCall {
                ts_ns: T0 + i * 50_000_000,
                pid: if i % 2 == 0 { 100 } else { 200 },
                tid: if i % 2 == 0 { 100 } else { 200 },
                op_id: launch,
                dur_ns: 10_000,
                copy_kind: -1,
                ..Default::default()
            })
        })
        .collect();
    w.write_batch(&events).expect("batch");
    w.finish(T0 + 1_000_000_000).expect("finish");
    let conn = rusqlite::Connection::open(&path).expect("open");
    conn.execute("UPDATE processes SET node = 'gpu-7' WHERE pid = 100", [])
        .expect("node");
    path
}

#[test]
fn nodes_and_ranks_come_from_the_file() {
    use ingero_tools::chains::chains_of;
    use ingero_tools::dataset::Dataset;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = ingero_store::TraceDb::open(&ranked_db(dir.path())).expect("open");
    let who = Identity::load(&db, None).expect("identity");
    assert_eq!(who.capture_node(), "host-a");
    assert_eq!((who.node_of(100), who.node_of(200)), ("gpu-7", "host-a"));
    let r = who.ranks_of(100);
    assert_eq!(
        (r.rank, r.local_rank, r.world_size),
        (Some(3), Some(1), Some(8))
    );
    assert_eq!(who.ranks_of(200), otlp::Ranks::default());
    let forced = Identity::load(&db, Some("node-z")).expect("identity");
    assert_eq!(
        (forced.node_of(100), forced.node_of(200)),
        ("node-z", "node-z")
    );
    assert_eq!(forced.ranks_of(100), r);

    let ds = Dataset::load(&db, &ingero_tools::Scope::ALL).expect("load");
    let chains = chains_of(&ds);
    let opts = options(otlp::DEFAULT_ENDPOINT, 1000);
    let s = |v: &str| serde_json::json!({ "stringValue": v });
    let i = |v: &str| serde_json::json!({ "intValue": v });
    let traces = otlp::traces::trace_requests(&ds, &chains, &who, &opts);
    let mut seen = BTreeSet::new();
    for b in &traces {
        for rs in b["resourceSpans"].as_array().into_iter().flatten() {
            let a = &rs["resource"]["attributes"];
            let pid = attr(a, "process.pid").expect("pid").clone();
            let (host, rank) = if pid == i("100") {
                ("gpu-7", Some(i("3")))
            } else {
                ("host-a", None)
            };
            assert_eq!(attr(a, "host.name"), Some(&s(host)), "{a}");
            assert_eq!(attr(a, "service.instance.id"), Some(&s(host)), "{a}");
            assert_eq!(attr(a, "ingero.rank").cloned(), rank, "{a}");
            if rank.is_some() {
                assert_eq!(attr(a, "ingero.local_rank"), Some(&i("1")));
                assert_eq!(attr(a, "ingero.world_size"), Some(&i("8")));
            }
            seen.insert(pid.to_string());
        }
    }
    assert_eq!(seen.len(), 2, "one resource per process");

    let metrics = otlp::metrics::metric_requests(&ds, &who, &opts);
    let calls = points(&metrics, "ingero.cuda.calls");
    assert!(!calls.is_empty());
    for (resource, p) in calls {
        let pid = attr(&p["attributes"], "process.pid").expect("pid");
        let on_gpu7 = *pid == i("100");
        let host = if on_gpu7 { "gpu-7" } else { "host-a" };
        assert_eq!(attr(resource, "host.name"), Some(&s(host)));
        assert_eq!(attr(&p["attributes"], "ingero.rank").is_some(), on_gpu7);
    }
    // The system samples belong to the capture's own host.
    for (resource, _) in points(&metrics, "system.cpu.utilization") {
        assert_eq!(attr(resource, "host.name"), Some(&s("host-a")));
    }
}
