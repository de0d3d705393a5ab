//! The second zoo's causes (rebuilt from public reports, one per case in
//! investigations/scripts/zoo2/zoo2.py) recorded on a machine without a GPU:
//! the cause itself is real (the garbage collector, a subprocess, a slow
//! pipe, a lock, a starved queue, small files, a memory map, image work on
//! the CPU), the step's GPU work goes to the stand-in CUDA runtime, and the
//! capture used real uprobes, tracepoints and stacks
//! (investigations/scripts/zoo2/record_standin.sh; files in
//! investigations/zoo2-standin).
//!
//! The expectations come from the construction only: cases.json names the
//! functions of zoo2.py the cause runs in, and the workload's own line gives
//! the time it measured inside them. The top finding must name one of those
//! functions in its summary or its dominant code path, explain at least half
//! the time the workload measured, and no first finding may explain under
//! 10% of the idle time while 40% of the loop's idle time is unexplained.

use ingero_store::TraceDb;
use ingero_tools::Scope;
use serde_json::Value;
use std::io::BufReader;
use std::path::PathBuf;
use tempfile::TempDir;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../investigations")
}

fn unpack(case: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new().expect("temp dir");
    let src = root().join(format!("zoo2-standin/zoo2-{case}.db.xz"));
    let file = std::fs::File::open(&src).expect("recording");
    let out = tmp.path().join(format!("zoo2-{case}.db"));
    let mut dst = std::fs::File::create(&out).expect("create");
    lzma_rs::xz_decompress(&mut BufReader::new(file), &mut dst).expect("xz");
    (tmp, out)
}

/// The functions zoo2.py defines (the construction's own code).
fn own_functions() -> Vec<String> {
    let src = std::fs::read_to_string(root().join("scripts/zoo2/zoo2.py")).expect("zoo2.py");
    src.lines()
        .filter_map(|l| l.trim_start().strip_prefix("def "))
        .filter_map(|l| l.split('(').next())
        .map(str::to_string)
        .collect()
}

fn results() -> Vec<Value> {
    std::fs::read_to_string(root().join("zoo2-standin/zoo2-results.jsonl"))
        .expect("results")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

#[test]
fn each_recorded_cause_is_named_by_its_own_code_first() {
    let own = own_functions();
    let lines = results();
    assert!(lines.len() >= 8, "{} recordings", lines.len());
    for line in &lines {
        let case = line["record"].as_str().expect("record");
        assert_eq!(line["ok"], true, "{case}: the workload did not finish");
        let names: Vec<&str> = line["expect"]["code"]
            .as_array()
            .expect("expect.code")
            .iter()
            .filter_map(Value::as_str)
            .filter(|n| own.iter().any(|o| o == n))
            .collect();
        assert!(!names.is_empty(), "{case}: no function of zoo2.py expected");
        let (_tmp, path) = unpack(case);
        let db = TraceDb::open(&path).expect("open");
        let r = ingero_tools::explain::explain(&db, &Scope::ALL).expect("explain");
        let chains = &r.chains.chains;
        let top = chains
            .first()
            .unwrap_or_else(|| panic!("{case}: no finding"));
        let dominant = top.code.first().map_or(String::new(), |c| c.text.clone());
        let text = format!("{} {dominant}", top.summary);
        assert!(
            names.iter().any(|n| text.contains(n)),
            "{case}: the top finding ({}) names none of {names:?}: {text}",
            top.cause.name()
        );
        // It explains the time the cause took, as the workload measured it
        // (the steady phase is part of the capture; more is the warm-up's).
        let cause_ns = line["derived"]["cause_s"].as_f64().expect("cause_s") * 1e9;
        assert!(
            top.explained_ns as f64 >= 0.5 * cause_ns,
            "{case}: explains {} ns of the {cause_ns} ns the cause took",
            top.explained_ns
        );
        // No small lead over a large unexplained part of the loop.
        let idle = &r.chains.gpu_idle[0];
        let c = &idle.causes;
        let loop_idle = (idle.host_wait_ns - c.before_first_call_ns - c.after_last_call_ns).max(1);
        let explained: i64 = chains.iter().map(|c| c.explained_ns).sum();
        let unexplained = (loop_idle - explained).max(0) as f64 / loop_idle as f64;
        assert!(
            top.explained_share >= 0.1 || unexplained < 0.4,
            "{case}: the lead explains {:.3} while {unexplained:.2} of the loop is unexplained",
            top.explained_share
        );
    }
}
