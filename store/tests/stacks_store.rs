//! Schema 4: stack samples interned and bounded per second and thread with
//! exact counts; older native files and Ingero files read with the same
//! stack tables (empty, or Ingero's call-site stacks).

use ingero_store::stacks::{parse_frames, stack_id, OFF_CPU_UNKNOWN};
use ingero_store::{
    RawPolicy, SessionInfo, StackFrame, StackKind, StackSample, TraceDb, TraceWriter,
};
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn one(db: &TraceDb, sql: &str) -> i64 {
    db.conn().query_row(sql, [], |r| r.get(0)).expect(sql)
}

fn sample(ts_ns: i64, tid: i32, kind: StackKind, off: i64, leaf: &str) -> StackSample {
    StackSample {
        ts_ns,
        pid: 10,
        tid,
        cpu: 0,
        kind,
        off_cpu_ns: off,
        state: if kind == StackKind::OffCpu { 0 } else { -1 },
        frames: vec![
            StackFrame::native("burn", leaf, 4),
            StackFrame::native("burn", "main", 30),
        ],
    }
}

#[test]
fn samples_are_interned_bounded_and_counted_exactly() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("stacks.db");
    let info = SessionInfo {
        started_ns: 1_000_000_000,
        stopped_ns: 4_000_000_000,
        ..Default::default()
    };
    let policy = RawPolicy::Sampled {
        per_second: 5,
        always_keep_ns: 1_000_000,
    };
    let mut w = TraceWriter::create(&path, &info, policy).expect("create");
    let mut batch = Vec::new();
    // Second 1: 20 on-CPU samples of thread 11 (5 kept), 8 of thread 12 (5 kept).
    for i in 0..20 {
        batch.push(sample(
            1_000_000_000 + i * 10_000_000,
            11,
            StackKind::OnCpu,
            0,
            "spin",
        ));
    }
    for i in 0..8 {
        batch.push(sample(
            1_000_000_000 + i * 10_000_000,
            12,
            StackKind::OnCpu,
            0,
            "other",
        ));
    }
    // Off-CPU: 10 short (5 kept) and 2 long blocks (always kept), one still off at the stop.
    for i in 0..10 {
        batch.push(sample(
            2_000_000_000 + i,
            11,
            StackKind::OffCpu,
            1_000,
            "wait",
        ));
    }
    batch.push(sample(
        2_100_000_000,
        11,
        StackKind::OffCpu,
        50_000_000,
        "wait",
    ));
    batch.push(sample(
        2_200_000_000,
        11,
        StackKind::OffCpu,
        70_000_000,
        "wait",
    ));
    let mut last = sample(
        2_300_000_000,
        11,
        StackKind::OffCpu,
        OFF_CPU_UNKNOWN,
        "wait",
    );
    last.frames.clear();
    batch.push(last);
    w.write_batch(&[]).expect("empty batch");
    w.write_stacks(&batch[..15]).expect("write");
    w.write_stacks(&batch[15..]).expect("write");
    w.write_stack_source(StackKind::OnCpu, 99, "2 CPUs")
        .expect("source");
    w.finish(4_000_000_000).expect("finish");

    let db = TraceDb::open(&path).expect("open");
    assert_eq!(one(&db, "SELECT COUNT(*) FROM stacks"), 4);
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM stack_samples WHERE tid = 11 AND kind = 1"
        ),
        5
    );
    assert_eq!(
        one(
            &db,
            "SELECT SUM(count) FROM stack_counts WHERE tid = 11 AND kind = 1"
        ),
        20
    );
    assert_eq!(
        one(&db, "SELECT SUM(stored) FROM stack_counts WHERE tid = 12"),
        5
    );
    // 5 short + 2 long + the empty one still off at the stop (kept like a long one).
    assert_eq!(
        one(&db, "SELECT COUNT(*) FROM stack_samples WHERE kind = 2"),
        8
    );
    assert_eq!(
        one(&db, "SELECT SUM(count) FROM stack_counts WHERE kind = 2"),
        13
    );
    assert_eq!(
        one(
            &db,
            "SELECT SUM(sum_off_cpu_ns) FROM stack_counts WHERE kind = 2"
        ),
        10_000 + 120_000_000
    );
    assert_eq!(one(&db, "SELECT hz FROM stack_sources WHERE kind = 1"), 99);
    let frames: String = db
        .conn()
        .query_row(
            "SELECT s.frames FROM stack_samples x JOIN stacks s ON s.id = x.stack_id \
             WHERE x.tid = 12 LIMIT 1",
            [],
            |r| r.get(0),
        )
        .expect("frames");
    let parsed = parse_frames(&frames).expect("parse");
    assert_eq!(parsed[0].function, "other");
    assert_eq!(
        one(
            &db,
            "SELECT stack_id FROM stack_samples WHERE tid = 12 LIMIT 1"
        ),
        stack_id(&parsed)
    );
}

#[test]
fn older_and_ingero_files_read_with_stack_tables() {
    let old = repo("investigations/pytorch-dataloader-starvation-h200.db");
    let db = TraceDb::open(&old).expect("open old");
    for table in ["stacks", "stack_samples", "stack_counts", "stack_sources"] {
        assert_eq!(
            one(&db, &format!("SELECT COUNT(*) FROM {table}")),
            0,
            "{table}"
        );
    }
    let ingero = repo("tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
    let db = TraceDb::open(&ingero).expect("open ingero");
    assert_eq!(one(&db, "SELECT COUNT(*) FROM stacks"), 21);
    assert_eq!(
        one(&db, "SELECT COUNT(*) FROM stack_samples WHERE kind = 4"),
        115
    );
    assert_eq!(one(&db, "SELECT SUM(count) FROM stack_counts"), 115);
    // Every sample names a stored stack, and its frames parse as native frames.
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM stack_samples x LEFT JOIN stacks s ON s.id = x.stack_id \
             WHERE s.id IS NULL"
        ),
        0
    );
    let mut stmt = db
        .conn()
        .prepare("SELECT frames FROM stacks")
        .expect("prepare");
    let all: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    let mut named = 0;
    for text in &all {
        let frames = parse_frames(text).unwrap_or_else(|| panic!("unparsed {text}"));
        named += frames
            .iter()
            .filter(|f| f.function == "cudaDeviceSynchronize")
            .count();
    }
    assert!(
        named > 0,
        "a cudaDeviceSynchronize frame, cut at its offset"
    );
}
