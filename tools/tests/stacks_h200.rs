//! Stack samples recorded on an NVIDIA H200 next to three workloads whose
//! host-side hot spot was written on purpose (investigations/scripts/
//! stacks_h200.py; files in investigations/zoo-h200, raw rows reduced to
//! what --sample 50 keeps, stack tables as recorded). Over each case's
//! steady phase, the GPU thread's heaviest Python frame in the category of
//! host wait the case was built for is the function built to be hot.

use ingero_store::{TimeWindow, TraceDb};
use ingero_tools::stacks::{hot_stacks, Category, SampleSet, StackQuery};
use ingero_tools::Scope;
use serde_json::Value;
use std::io::BufReader;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../investigations/zoo-h200")
}

fn case_line(case: &str) -> Value {
    let text = std::fs::read_to_string(dir().join("stacks-results.jsonl")).expect("results");
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["stacks_case"] == case)
        .unwrap_or_else(|| panic!("no line for {case}"))
}

fn top_python_leaf(case: &str, category: Category) -> (String, f64) {
    let tmp = tempfile::tempdir().expect("tmp");
    let src = dir().join(format!("stacks-{case}-s50.db.xz"));
    let path = tmp.path().join("c.db");
    let mut out = std::fs::File::create(&path).expect("create");
    lzma_rs::xz_decompress(
        &mut BufReader::new(std::fs::File::open(src).expect("committed file")),
        &mut out,
    )
    .expect("xz");
    let v = case_line(case);
    let steady = v["steady_realtime_ns"].as_array().expect("steady");
    let (lo, hi) = (
        steady[0].as_i64().expect("lo"),
        steady[1].as_i64().expect("hi"),
    );
    let tid = v["gpu_tid"].as_i64().expect("tid") as i32;
    let db = TraceDb::open(&path).expect("open");
    let end = db.span().end_ns;
    let q = StackQuery {
        scope: Scope {
            window: TimeWindow {
                since_ns: Some(end - lo),
                until_ns: Some(end - hi),
            },
            pid: None,
        },
        tid: Some(tid),
        gpu_thread: false,
        set: Some(SampleSet::Python),
        category: Some(category),
        limit: 5,
    };
    let r = hot_stacks(&db, &q).expect("stacks");
    let top = r.top_python.first().expect("a Python frame");
    (top.frame.clone(), top.self_share)
}

#[test]
fn each_constructed_hot_spot_is_the_top_frame_of_its_host_wait() {
    for (case, category) in [
        ("getitem_transform", Category::OnCpu),
        ("python_busy_loop", Category::OnCpu),
        ("item_sync", Category::InCuda),
    ] {
        let hot = case_line(case)["hot_function"]
            .as_str()
            .expect("hot function")
            .to_string();
        let (frame, share) = top_python_leaf(case, category);
        assert!(
            frame.ends_with(&format!(":{hot}")),
            "{case}: top frame {frame} ({share:.2}), built hot spot {hot}"
        );
        assert!(share >= 0.3, "{case}: {frame} only {share:.2}");
    }
}
