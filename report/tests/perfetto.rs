//! The trace-event export has the structure ui.perfetto.dev and
//! chrome://tracing need: typed required fields per phase, named processes
//! and threads, events in time order on every track, properly nested
//! complete events, and one event per raw CUDA call.

mod common;

use ingero_report::perfetto::{self, CHAINS_PID, SYSTEM_PID};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn exported() -> (Value, usize, usize) {
    let (ds, chains) = common::seed_dataset();
    let mut buf = Vec::new();
    perfetto::write_trace(&ds, &chains, &mut buf).expect("write trace");
    let v: Value = serde_json::from_slice(&buf).expect("valid JSON");
    (v, ds.calls.len(), chains.chains.len())
}

#[test]
fn every_event_has_the_fields_its_phase_requires() {
    let (v, _, _) = exported();
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    assert!(events.len() > 1000);
    assert_eq!(v["displayTimeUnit"], "ns");
    assert!(v["otherData"]["capture_start_ns"].is_i64());
    for e in events {
        let ph = e["ph"].as_str().expect("ph string");
        assert!(e["name"].as_str().is_some_and(|n| !n.is_empty()), "{e}");
        assert!(e["pid"].is_i64(), "{e}");
        assert!(e["tid"].is_i64(), "{e}");
        let ts = e["ts"].as_f64().expect("numeric ts");
        assert!(ts.is_finite() && ts >= 0.0, "{e}");
        match ph {
            "X" => {
                let dur = e["dur"].as_f64().expect("X has dur");
                assert!(dur.is_finite() && dur >= 0.0, "{e}");
                assert!(e["cat"].is_string(), "{e}");
            }
            "C" => {
                let args = e["args"].as_object().expect("C has args");
                assert!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "{e}"
                );
            }
            "i" => assert_eq!(e["s"], "g", "{e}"),
            "M" => {
                let name = e["name"].as_str().unwrap_or_default();
                assert!(
                    [
                        "process_name",
                        "thread_name",
                        "process_sort_index",
                        "thread_sort_index"
                    ]
                    .contains(&name),
                    "{e}"
                );
                assert!(e["args"].is_object(), "{e}");
            }
            other => panic!("unexpected phase {other}"),
        }
    }
}

#[test]
fn tracks_are_named_ordered_and_nested() {
    let (v, calls, chains) = exported();
    let events = v["traceEvents"].as_array().expect("events");
    let mut named_pids = BTreeSet::new();
    let mut named_threads = BTreeSet::new();
    let mut seen_non_meta = false;
    for e in events {
        if e["ph"] == "M" {
            assert!(!seen_non_meta, "metadata comes first");
            let key = (e["pid"].as_i64(), e["tid"].as_i64());
            match e["name"].as_str() {
                Some("process_name") => {
                    assert!(e["args"]["name"].as_str().is_some_and(|n| !n.is_empty()));
                    named_pids.insert(key.0);
                }
                Some("thread_name") => {
                    assert!(e["args"]["name"].as_str().is_some_and(|n| !n.is_empty()));
                    named_threads.insert(key);
                }
                _ => {}
            }
        } else {
            seen_non_meta = true;
        }
    }
    // Per track: time order, and complete events either nest or follow.
    let mut last_ts: BTreeMap<(i64, i64, String), f64> = BTreeMap::new();
    let mut open: BTreeMap<(i64, i64), Vec<f64>> = BTreeMap::new();
    let (mut cuda, mut marks) = (0, 0);
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let pid = e["pid"].as_i64().unwrap_or_default();
        let tid = e["tid"].as_i64().unwrap_or_default();
        let ts = e["ts"].as_f64().unwrap_or_default();
        assert!(named_pids.contains(&Some(pid)), "pid {pid} has no name");
        let ph = e["ph"].as_str().unwrap_or_default().to_string();
        let track = if ph == "C" {
            (pid, 0, e["name"].as_str().unwrap_or_default().to_string())
        } else {
            (pid, tid, ph.clone())
        };
        if let Some(prev) = last_ts.insert(track.clone(), ts) {
            assert!(ts >= prev, "{track:?} goes back in time at {ts}");
        }
        if ph == "X" {
            assert!(
                named_threads.contains(&(Some(pid), Some(tid))),
                "thread {pid}/{tid} has no name"
            );
            let end = ts + e["dur"].as_f64().unwrap_or_default();
            let stack = open.entry((pid, tid)).or_default();
            while stack.last().is_some_and(|top| *top <= ts) {
                stack.pop();
            }
            if let Some(top) = stack.last() {
                assert!(
                    end <= *top + 1e-3,
                    "{e} overlaps its parent ending at {top}"
                );
            }
            stack.push(end);
            if e["cat"].as_str().is_some_and(|c| c.starts_with("cuda")) {
                cuda += 1;
            }
        }
        if ph == "i" {
            marks += 1;
        }
    }
    assert_eq!(cuda, calls, "one complete event per raw CUDA call");
    assert_eq!(marks, chains, "one marker per causal chain");
    assert!(named_pids.contains(&Some(SYSTEM_PID)));
    assert!(named_pids.contains(&Some(CHAINS_PID)));
    assert!(named_pids.contains(&Some(2233)));
}

#[test]
fn counters_cover_cpu_and_page_allocations() {
    let (v, _, _) = exported();
    let events = v["traceEvents"].as_array().expect("events");
    let counters: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(counters.contains("CPU %"));
    assert!(counters.contains("page allocs/s"));
    let main_rates = events
        .iter()
        .filter(|e| e["ph"] == "C" && e["name"] == "page allocs/s" && e["pid"] == 2233)
        .count();
    assert!(main_rates >= 2, "the main process allocates pages");
}
