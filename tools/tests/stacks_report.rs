//! Hot stacks on a file written through the store writer: samples are put
//! in categories by their thread's CUDA calls and off-CPU intervals, shares
//! are of the stated whole, folded stacks weigh time.

use ingero_store::{
    CudaCall, Event, HostEvent, HostKind, RawPolicy, SessionInfo, StackFrame, StackKind,
    StackSample, TraceDb, TraceWriter,
};
use ingero_tools::stacks::{folded, hot_stacks, Category, SampleSet, StackQuery};
use ingero_tools::Scope;

const T0: i64 = 1_700_000_000_000_000_000;
const MS: i64 = 1_000_000;

fn py(ts_ns: i64, leaf: &str, file: &str) -> StackSample {
    StackSample {
        ts_ns,
        pid: 650,
        tid: 654,
        cpu: -1,
        kind: StackKind::Python,
        off_cpu_ns: 0,
        state: 1,
        frames: vec![
            StackFrame::python(leaf, file, 10),
            StackFrame::python("__getitem__", "/w/dataset.py", 20),
            StackFrame::python("<module>", "/w/train.py", 1),
        ],
    }
}

/// Thread 654: a CUDA call over [100, 200) ms, off the CPU (blocked) over
/// [300, 400) ms. Python samples every 10 ms over 0..1000 ms: 10 inside the
/// call, 10 while blocked, 80 on the CPU (57 in <listcomp>, 23 in collate).
fn file(dir: &std::path::Path) -> TraceDb {
    let path = dir.join("stacks.db");
    let info = SessionInfo {
        started_ns: T0,
        stopped_ns: T0 + 1_000 * MS,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("create");
    let call = CudaCall {
        ts_ns: T0 + 100 * MS,
        pid: 650,
        tid: 654,
        op_id: 1,
        dur_ns: 100 * MS - 1,
        copy_kind: -1,
        ..Default::default()
    };
    let switch = HostEvent {
        ts_ns: T0 + 300 * MS,
        pid: 650,
        tid: 654,
        kind: HostKind::SchedSwitch,
        dur_ns: 100 * MS - 1,
        arg: 0,
        cpu: 0,
        count: 1,
        bytes: 0,
    };
    w.write_batch(&[Event::Cuda(call), Event::Host(switch)])
        .expect("events");
    let mut samples = Vec::new();
    let mut on_cpu = 0;
    for i in 0..100 {
        let ts = T0 + i * 10 * MS + MS;
        let in_call = (100..200).contains(&(i * 10));
        let blocked = (300..400).contains(&(i * 10));
        let s = if in_call {
            py(ts, "launch", "/w/model.py")
        } else if blocked {
            py(ts, "wait", "/usr/lib/python3/queue.py")
        } else {
            on_cpu += 1;
            if on_cpu <= 57 {
                py(ts, "<listcomp>", "/t/torch/utils/data/_utils/fetch.py")
            } else {
                py(ts, "collate", "/t/collate.py")
            }
        };
        samples.push(s);
    }
    w.write_stacks(&samples).expect("stacks");
    w.write_stack_source(StackKind::Python, 100, "test")
        .expect("source");
    w.finish(T0 + 1_000 * MS).expect("finish");
    TraceDb::open(&path).expect("open")
}

#[test]
fn host_wait_samples_name_their_top_python_frame_with_its_share() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = file(dir.path());
    let all = hot_stacks(
        &db,
        &StackQuery {
            scope: Scope::ALL,
            gpu_thread: true,
            ..Default::default()
        },
    )
    .expect("report");
    assert_eq!(all.set, SampleSet::Python);
    assert_eq!(all.tid, Some(654), "the GPU thread is the one calling CUDA");
    let cat = |c: Category| {
        all.categories
            .iter()
            .find(|x| x.category == c)
            .map(|x| x.samples)
    };
    assert_eq!(cat(Category::InCuda), Some(10));
    assert_eq!(cat(Category::Blocked), Some(10));
    assert_eq!(cat(Category::OnCpu), Some(80));
    assert_eq!(all.samples, 100);
    assert_eq!(all.time_ns, 100 * 10 * MS, "each sample is 1/100 s");

    let wait = hot_stacks(
        &db,
        &StackQuery {
            scope: Scope::ALL,
            tid: Some(654),
            category: Some(Category::OnCpu),
            ..Default::default()
        },
    )
    .expect("report");
    assert_eq!(wait.samples, 80);
    let top = &wait.top_python[0];
    assert_eq!(top.frame, "fetch.py:<listcomp>");
    assert!((top.self_share - 57.0 / 80.0).abs() < 1e-9);
    assert_eq!(
        wait.headline.as_deref(),
        Some(
            "71% of on-CPU outside CUDA Python samples of thread 654 in fetch.py:<listcomp> \
             (/t/torch/utils/data/_utils/fetch.py:10)"
        )
    );
    let getitem = wait
        .top_python
        .iter()
        .find(|f| f.frame == "dataset.py:__getitem__")
        .expect("caller");
    assert_eq!((getitem.self_samples, getitem.total_samples), (0, 80));
    assert_eq!(wait.stacks[0].samples, 57);
    let text = ingero_tools::render_stacks::stacks_text(&wait);
    assert!(text.contains("71% of on-CPU outside CUDA"), "{text}");

    let f = folded(
        &db,
        &StackQuery {
            scope: Scope::ALL,
            category: Some(Category::OnCpu),
            ..Default::default()
        },
    )
    .expect("folded");
    let first = f.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "train.py:<module>;dataset.py:__getitem__;fetch.py:<listcomp> 570000"
    );
    assert_eq!(f.lines().count(), 2);
}

#[test]
fn a_file_without_stacks_says_so() {
    let db = TraceDb::open(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../investigations/pytorch-dataloader-starvation-h200.db"),
    )
    .expect("open");
    let r = hot_stacks(&db, &StackQuery::default()).expect("report");
    assert_eq!(r.samples, 0);
    assert!(r.headline.is_none());
    assert!(r.notes[0].contains("--stack-hz"), "{:?}", r.notes);
}
