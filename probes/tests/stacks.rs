//! Stack sampling end to end: real perf events, the real sched_switch
//! program and py-spy on stand-in processes with known functions
//! (`tests/standin/burn.c`, `tests/standin/burn.py`), symbolised during
//! the capture and checked with SQL on the file it wrote.

mod common;

use ingero_probes::{start, CaptureConfig, StopReason, Target};
use ingero_store::stacks::parse_frames;
use ingero_store::{FrameKind, StackFrame, TraceDb};
use std::path::{Path, PathBuf};
use std::time::Duration;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

/// Captures `argv` with stack sampling at `hz` (Python sampling as asked).
fn capture(argv: Vec<String>, db: &Path, hz: u32, python: bool) -> ingero_probes::CaptureSummary {
    let dir = common::standin();
    let mut cfg = CaptureConfig::new(Target::Command(argv), db);
    cfg.libraries = vec![dir.join("libcudart.so.13")];
    cfg.duration = Some(Duration::from_secs(30));
    cfg.nvml = false;
    cfg.stack_hz = hz;
    cfg.python_stacks = python;
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.command_exit, Some(0));
    summary
}

/// (off_cpu_ns, state, frames) of every stored sample of `kind`.
fn samples(db: &TraceDb, kind: i64) -> Vec<(i64, i64, Vec<StackFrame>)> {
    let mut stmt = db
        .conn()
        .prepare(
            "SELECT x.off_cpu_ns, x.state, s.frames FROM stack_samples x \
             JOIN stacks s ON s.id = x.stack_id WHERE x.kind = ?1 ORDER BY x.ts_ns",
        )
        .expect("prepare");
    stmt.query_map([kind], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, i64>(1)?,
            r.get::<_, String>(2)?,
        ))
    })
    .expect("query")
    .map(|r| {
        let (off, state, text) = r.expect("row");
        (off, state, parse_frames(&text).expect("frames parse"))
    })
    .collect()
}

fn leaf(frames: &[StackFrame], kind: FrameKind) -> Option<&StackFrame> {
    frames.iter().find(|f| f.kind == kind)
}

fn one(db: &TraceDb, sql: &str) -> i64 {
    db.conn().query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn on_cpu_samples_name_the_burning_native_function() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db_path = tmp.path().join("burn.db");
    let argv = vec![
        dir.join("burn").display().to_string(),
        "--burn-ms".into(),
        "1500".into(),
    ];
    let summary = capture(argv, &db_path, 199, false);
    let db = TraceDb::open(&db_path).expect("open");
    let on = samples(&db, 1);
    // 1.5 s on one CPU at 199 Hz is about 300 samples.
    assert!(on.len() >= 150, "{} on-CPU samples", on.len());
    assert_eq!(
        one(&db, "SELECT SUM(count) FROM stack_counts WHERE kind = 1"),
        on.len() as i64,
        "every sample is kept under the default policy"
    );
    let in_spin = on
        .iter()
        .filter(|(_, _, f)| {
            leaf(f, FrameKind::Native).is_some_and(|l| l.function == "ingero_burn_spin")
        })
        .count();
    assert!(
        in_spin * 10 >= on.len() * 8,
        "{in_spin} of {} samples in ingero_burn_spin; first: {:?}",
        on.len(),
        on.first()
    );
    let with_caller = on
        .iter()
        .filter(|(_, _, f)| {
            f.iter().any(|x| x.function == "ingero_burn_outer")
                && f.iter().any(|x| x.function == "main")
        })
        .count();
    assert!(
        with_caller * 10 >= on.len() * 8,
        "callers walked by frame pointer in {with_caller} of {}: {:?}",
        on.len(),
        &on[..3]
    );
    let module = leaf(&on[on.len() / 2].2, FrameKind::Native).map(|f| f.module.clone());
    assert_eq!(module.as_deref(), Some("burn"));
    let st = &summary.status.stacks;
    assert_eq!(st.hz, 199);
    assert!(st.cpus >= 1);
    assert!(st.frames_resolved > 0);
    let note: String = db
        .conn()
        .query_row("SELECT note FROM stack_sources WHERE kind = 1", [], |r| {
            r.get(0)
        })
        .expect("note");
    assert!(note.contains("CPU-clock perf event"), "{note}");
}

#[test]
fn a_cuda_thread_leaving_the_cpu_leaves_its_stack_and_off_cpu_time() {
    if !common::can_trace() {
        return;
    }
    let dir = common::standin();
    let tmp = tempfile::tempdir().expect("tmp");
    let db_path = tmp.path().join("block.db");
    let argv = vec![
        dir.join("burn").display().to_string(),
        "--cuda".into(),
        dir.display().to_string(),
        "--blocks".into(),
        "30".into(),
        "--block-ms".into(),
        "20".into(),
    ];
    capture(argv, &db_path, 99, false);
    let db = TraceDb::open(&db_path).expect("open");
    let off = samples(&db, 2);
    let in_block_fn: Vec<_> = off
        .iter()
        .filter(|(_, _, f)| {
            leaf(f, FrameKind::Native).is_some_and(|l| l.function == "ingero_block_here")
        })
        .collect();
    // The constructed sleeps are blocks; the same function can also be
    // preempted on its way into or out of the syscall (a busy machine):
    // those are switch-outs too, marked as preemptions, and are not the
    // sleeps.
    let (blocks, preempted): (Vec<_>, Vec<_>) = in_block_fn
        .into_iter()
        .partition(|(_, state, _)| *state == 0);
    assert!(
        blocks.len() >= 28,
        "{} of 30 blocks; {} preempted there; {} off-CPU samples",
        blocks.len(),
        preempted.len(),
        off.len()
    );
    assert!(blocks.len() <= 30, "{} blocks of 30 sleeps", blocks.len());
    for (off_ns, state, _) in &preempted {
        // A switch-out whose switch-in the capture did not see (the thread
        // was still off the CPU when the capture stopped, a race with the
        // workload's end on a busy machine) has no known state or length.
        assert!(
            *state == 1 || (*state == -1 && *off_ns == -1),
            "a switch-out is a block, a preemption, or still off at the stop: state {state}, \
             off {off_ns} ns"
        );
    }
    for (off_ns, _, frames) in &blocks {
        assert!(
            *off_ns >= 15_000_000,
            "blocked {off_ns} ns in a 20 ms sleep: {:?}",
            frames.iter().map(|f| &f.function).collect::<Vec<_>>()
        );
        let kernel = frames
            .iter()
            .take_while(|f| f.kind == FrameKind::Kernel)
            .count();
        assert!(kernel > 0, "the kernel part of a switch-out: {frames:?}");
        assert!(
            frames.iter().any(|f| f.function.contains("schedule")),
            "the scheduler in the kernel part: {frames:?}"
        );
    }
    // The same intervals in host_events: the join matched exactly.
    let long_switches = one(
        &db,
        "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND dur_ns >= 15000000 \
         AND tid IN (SELECT tid FROM stack_samples WHERE kind = 2)",
    );
    assert!(long_switches >= blocks.len() as i64);
}

#[test]
fn python_samples_name_the_pure_python_function() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db_path = tmp.path().join("py.db");
    let script = repo("tests/standin/burn.py");
    let argv = vec!["python3".into(), script.display().to_string(), "2".into()];
    let summary = capture(argv, &db_path, 99, true);
    let db = TraceDb::open(&db_path).expect("open");
    let py = samples(&db, 3);
    assert!(
        py.len() >= 60,
        "{} Python samples; status {:?}",
        py.len(),
        summary.status.stacks
    );
    // Inside the burn loop (samples under ingero_py_outer; start-up and
    // exit, which a busy machine stretches, are outside it) nearly all the
    // time is in ingero_py_spin: each call is ~2 ms, the loop's own check a
    // microsecond.
    let in_loop: Vec<_> = py
        .iter()
        .filter(|(_, _, f)| {
            f.iter()
                .any(|x| x.kind == FrameKind::Python && x.function == "ingero_py_outer")
        })
        .collect();
    assert!(
        in_loop.len() * 2 >= py.len(),
        "{} of {} Python samples inside ingero_py_outer",
        in_loop.len(),
        py.len()
    );
    let spin = in_loop
        .iter()
        .filter(|(_, _, f)| {
            leaf(f, FrameKind::Python).is_some_and(|l| {
                l.function == "ingero_py_spin" && l.file.ends_with("burn.py") && l.line > 0
            })
        })
        .count();
    assert!(
        spin * 10 >= in_loop.len() * 9,
        "{spin} of {} Python samples in the loop in ingero_py_spin; first {:?}",
        in_loop.len(),
        in_loop.first()
    );
    let whole = py
        .iter()
        .filter(|(_, _, f)| f.iter().any(|x| x.function == "ingero_py_outer"))
        .count();
    assert!(
        whole * 10 >= py.len() * 9,
        "{whole} of {} with the caller: {:?}",
        py.len(),
        &py[..2]
    );
    // Python samples carry the OS thread id of the interpreter's main thread.
    let main_tid = one(
        &db,
        "SELECT COUNT(*) FROM stack_samples WHERE kind = 3 AND tid = pid",
    );
    assert_eq!(main_tid, py.len() as i64);
    // And the native sampler saw the same thread at the same time.
    assert!(one(&db, "SELECT COUNT(*) FROM stack_samples WHERE kind = 1") > 50);
    let note: String = db
        .conn()
        .query_row("SELECT note FROM stack_sources WHERE kind = 3", [], |r| {
            r.get(0)
        })
        .expect("note");
    assert!(note.contains("on 1 processes"), "{note}");
}
