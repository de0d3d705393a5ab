//! `ingero report` and `ingero export` from the command line: files written,
//! OTLP delivered (JSON or protobuf, with the node named), and exit codes 2
//! for bad input and 1 for an unreachable receiver.

#[path = "../../report/tests/common/receiver.rs"]
mod receiver;

use std::path::Path;
use std::process::{Command, Output};

fn ingero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(args)
        .output()
        .expect("run ingero")
}

fn seed() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
        .display()
        .to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn report_writes_one_self_contained_page() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("r.html");
    let run = ingero(&[
        "report",
        "--db",
        &seed(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let page = std::fs::read_to_string(&out).expect("page written");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains("id=\"ingero-data\""));
    assert!(page.contains("Content-Security-Policy"));
    for remote in ["src=\"http", "href=\"http", "@import", "url(http"] {
        assert!(!page.contains(remote), "the page loads {remote}");
    }
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("causal chains"), "{stdout}");
}

#[test]
fn report_on_a_missing_database_is_bad_input() {
    let run = ingero(&[
        "report",
        "--db",
        "/nonexistent/trace.db",
        "--out",
        "/tmp/x.html",
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).starts_with("ingero: "));
}

#[test]
fn export_perfetto_writes_trace_events() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("trace.json");
    let run = ingero(&[
        "export",
        "--format",
        "perfetto",
        "--db",
        &seed(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("trace written")).expect("JSON");
    assert!(v["traceEvents"].as_array().is_some_and(|e| e.len() > 1000));
}

#[test]
fn export_perfetto_without_out_is_bad_input() {
    let run = ingero(&["export", "--format", "perfetto", "--db", &seed()]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("--out"));
}

#[test]
fn export_otlp_reaches_a_receiver() {
    let rx = receiver::Receiver::start(200);
    let run = ingero(&[
        "export",
        "--format",
        "otlp",
        "--db",
        &seed(),
        "--endpoint",
        &rx.endpoint,
        "--service-name",
        "cli-test",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let got = rx.received();
    assert!(got.iter().any(|r| r.path == "/v1/traces"));
    assert!(got.iter().any(|r| r.path == "/v1/metrics"));
    assert!(got
        .iter()
        .all(|r| String::from_utf8_lossy(&r.body).contains("cli-test")));
}

#[test]
fn export_otlp_to_a_receiver_that_is_down_fails_with_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let endpoint = format!("http://127.0.0.1:{port}");
    let run = ingero(&[
        "export",
        "--format",
        "otlp",
        "--db",
        &seed(),
        "--endpoint",
        &endpoint,
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let err = stderr(&run);
    assert!(err.starts_with("ingero: sending to "), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

#[test]
fn export_otlp_with_a_malformed_endpoint_is_bad_input() {
    let run = ingero(&[
        "export",
        "--format",
        "otlp",
        "--db",
        &seed(),
        "--endpoint",
        "collector:4318",
    ]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("http://"));
}

#[test]
fn export_otlp_names_the_node_and_sends_only_the_chosen_signals() {
    let rx = receiver::Receiver::start(200);
    let run = ingero(&[
        "export",
        "--format",
        "otlp",
        "--db",
        &seed(),
        "--endpoint",
        &rx.endpoint,
        "--node",
        "edge-7",
        "--protocol",
        "http/protobuf",
        "--signals",
        "metrics",
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(String::from_utf8_lossy(&run.stdout).contains("(node edge-7)"));
    let got = rx.received();
    assert!(!got.is_empty());
    for r in &got {
        assert_eq!(r.path, "/v1/metrics");
        assert_eq!(r.content_type, "application/x-protobuf");
        // host.name and service.instance.id, as protobuf strings.
        assert!(r.body.windows(6).filter(|w| w == b"edge-7").count() >= 2);
    }
}

#[test]
fn export_otlp_with_an_empty_node_is_bad_input() {
    let run = ingero(&["export", "--format", "otlp", "--db", &seed(), "--node", " "]);
    assert_eq!(run.status.code(), Some(2), "{}", stderr(&run));
    assert!(stderr(&run).contains("--node"));
}
