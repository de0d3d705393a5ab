//! OTLP/HTTP export against a local receiver: the JSON bodies decode into
//! the OTLP structure (resource -> scope -> spans / metrics, hex ids, string
//! nanosecond times, typed attribute values), carry one span per raw CUDA
//! call and off-CPU interval, keep their ids from one export to the next,
//! and failures say whether the receiver was down or said no.

mod common;

use common::receiver::{Received, Receiver};
use ingero_report::otlp::{self, OtlpOptions};
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
    }
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
    let summary = otlp::export(&ds, &chains, &options(&rx.endpoint, 500)).expect("export");
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
                            assert_eq!(s["aggregationTemporality"], 1);
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
    let a = otlp::traces::trace_requests(&ds, &chains, &opts);
    let b = otlp::traces::trace_requests(&ds, &chains, &opts);
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
    let err = otlp::export(&ds, &chains, &options(&rx.endpoint, 500)).expect_err("refused");
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
