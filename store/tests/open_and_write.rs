//! Round trips through the writer and the reader, and the Ingero (Go) mapping
//! on the recorded reference databases.

use ingero_store::{
    CudaCall, Event, HostEvent, HostKind, ProcessInfo, RawPolicy, SessionInfo, StoreError, TraceDb,
    TraceWriter,
};
use std::path::{Path, PathBuf};

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations")
        .join(name)
}

fn count(db: &TraceDb, sql: &str) -> i64 {
    db.conn().query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn seed_database_maps_onto_native_names() {
    let path = reference("pytorch-dataloader-starvation.db");
    let before = std::fs::read(&path).expect("read seed");
    let db = TraceDb::open(&path).expect("open seed");
    assert!(matches!(
        db.format(),
        ingero_store::DbFormat::IngeroGo { .. }
    ));
    // Every raw row of the file lands in exactly one native view.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM cuda_calls"),
        7 + 16 + 21 + 3 + 14 + 41 + 3 + 10
    );
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM host_events WHERE kind = 1"),
        3676
    );
    // Of the 11 fork rows, 4 start processes; the other 7 start threads
    // (tests/ingero_foreign.rs) and are no fork events.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM host_events WHERE kind = 4"),
        4
    );
    let sync = count(
        &db,
        "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id WHERE o.name = 'cudaStreamSynchronize'",
    );
    assert_eq!(sync, 21);
    // Aggregates keep the unstored counts.
    assert_eq!(
        count(
            &db,
            "SELECT SUM(count) FROM aggregates WHERE source = 2 AND code = 3 AND pid = 2233"
        ),
        1_173_407
    );
    // Workers get their parent from fork events.
    assert_eq!(
        count(&db, "SELECT ppid FROM processes WHERE pid = 2255"),
        2233
    );
    // 2267, forked by worker 2254 and never seen again, is a thread of it.
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM processes WHERE pid = 2267"),
        0
    );
    let span = db.span();
    assert_eq!(span.start_ns, 1_774_015_560_702_813_548);
    assert_eq!(span.end_ns, 1_774_015_655_329_237_630);
    drop(db);
    assert_eq!(
        std::fs::read(&path).expect("reread"),
        before,
        "file must be untouched"
    );
}

#[test]
fn cluster_databases_open() {
    for name in ["sample-cluster.db", "sample-gpu-node-01.db"] {
        let db = TraceDb::open(&reference(name)).expect(name);
        assert!(count(&db, "SELECT COUNT(*) FROM host_events") > 0, "{name}");
    }
    let db = TraceDb::open(&reference("sample-cluster.db")).expect("cluster");
    assert_eq!(
        count(&db, "SELECT COUNT(DISTINCT session_id) FROM host_events"),
        3
    );
}

#[test]
fn writer_round_trip_and_sampling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    let info = SessionInfo {
        host: "h".into(),
        started_ns: 1_000_000_000_000,
        ..Default::default()
    };
    let mut w = TraceWriter::create(
        &path,
        &info,
        RawPolicy::Sampled {
            per_second: 2,
            always_keep_ns: 1_000_000,
        },
    )
    .expect("create");
    let mut events = Vec::new();
    for i in 0..10i64 {
        events.push(Event::Cuda(CudaCall {
            ts_ns: 1_000_000_000_000 + i * 1000,
            pid: 7,
            tid: 7,
            op_id: 3,
            dur_ns: if i == 9 { 5_000_000 } else { 10_000 },
            bytes: 0,
            copy_kind: -1,
            stream: 0,
            ret: 0,
            ..Default::default()
        }));
        events.push(Event::Host(HostEvent {
            ts_ns: 1_000_000_000_000 + i * 1000,
            pid: 8,
            tid: 9,
            kind: HostKind::PageAlloc,
            dur_ns: 0,
            arg: 1,
            cpu: 0,
            count: 1,
            bytes: 8192,
        }));
    }
    w.write_batch(&events).expect("batch");
    w.upsert_process(&ProcessInfo {
        pid: 8,
        ppid: 7,
        comm: "worker".into(),
        ..Default::default()
    })
    .expect("process");
    w.finish(1_000_500_000_000).expect("finish");
    let db = TraceDb::open(&path).expect("open");
    assert_eq!(
        count(&db, "SELECT COUNT(*) FROM cuda_calls"),
        3,
        "2 sampled + 1 tail"
    );
    assert_eq!(
        count(&db, "SELECT SUM(count) FROM aggregates WHERE source = 1"),
        10
    );
    assert_eq!(
        count(&db, "SELECT SUM(stored) FROM aggregates WHERE source = 1"),
        3
    );
    assert_eq!(
        count(
            &db,
            "SELECT MAX(max_dur_ns) FROM aggregates WHERE source = 1"
        ),
        5_000_000
    );
    assert_eq!(
        count(
            &db,
            "SELECT SUM(sum_bytes) FROM aggregates WHERE source = 2"
        ),
        10 * 8192
    );
    assert_eq!(db.span().end_ns, 1_000_500_000_000);
}

#[test]
fn bad_files_give_specific_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.db");
    assert!(matches!(
        TraceDb::open(&missing),
        Err(StoreError::NotFound(_))
    ));
    let text = dir.path().join("text.db");
    std::fs::write(&text, "hello, not a database at all").expect("write");
    assert!(matches!(
        TraceDb::open(&text),
        Err(StoreError::NotSqlite(_))
    ));
    let zero = dir.path().join("zero.db");
    std::fs::write(&zero, b"").expect("write");
    assert!(matches!(TraceDb::open(&zero), Err(StoreError::Empty(_))));
    let other = dir.path().join("other.db");
    let c = rusqlite::Connection::open(&other).expect("sqlite");
    c.execute_batch("CREATE TABLE customers(id INTEGER);")
        .expect("ddl");
    drop(c);
    assert!(matches!(
        TraceDb::open(&other),
        Err(StoreError::ForeignSchema { .. })
    ));
    let no_data = dir.path().join("nodata.db");
    let w = TraceWriter::create(&no_data, &SessionInfo::default(), RawPolicy::All).expect("w");
    w.finish(0).expect("finish");
    assert!(matches!(TraceDb::open(&no_data), Err(StoreError::Empty(_))));
    // Times no capture can hold (a damaged file): refused as corrupt, with them named.
    for (started, stopped) in [
        (-1_000, 2_000),
        (1_000, (1i64 << 62) + 1),
        (0, 400 * 86_400 * 1_000_000_000),
    ] {
        let path = dir.path().join(format!("span{started}.db"));
        let info = SessionInfo {
            started_ns: started,
            stopped_ns: stopped,
            ..Default::default()
        };
        let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("w");
        let call = CudaCall {
            ts_ns: started + 1,
            pid: 1,
            tid: 1,
            op_id: 1,
            dur_ns: 10,
            copy_kind: -1,
            ..Default::default()
        };
        w.write_batch(&[Event::Cuda(call)]).expect("write");
        w.finish(stopped).expect("finish");
        match TraceDb::open(&path) {
            Err(e @ StoreError::Corrupt { .. }) => {
                assert!(e.to_string().contains(&stopped.to_string()), "{e}")
            }
            other => panic!("span {started}..{stopped}: {:?}", other.err()),
        }
    }
}

/// Reading never leaves files next to a database at rest, whatever its
/// journal mode; a database being written (WAL with its `-wal` file) is read
/// live, including batches committed after it was opened.
#[test]
fn reading_leaves_no_files_behind_and_follows_a_live_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let go = dir.path().join("go-wal.db");
    std::fs::copy(reference("sample-cluster.db"), &go).expect("copy");
    let before = std::fs::read(&go).expect("read");
    let db = TraceDb::open(&go).expect("open WAL file at rest");
    assert!(count(&db, "SELECT COUNT(*) FROM cuda_calls") > 0);
    drop(db);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["go-wal.db".to_string()],
        "sidecar files created"
    );
    assert_eq!(std::fs::read(&go).expect("read"), before);

    let live = dir.path().join("live.db");
    let info = SessionInfo {
        started_ns: 1_000_000_000_000,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&live, &info, RawPolicy::All).expect("create");
    let call = |i: i64| {
        Event::Cuda(CudaCall {
            ts_ns: 1_000_000_000_000 + i * 1000,
            pid: 7,
            tid: 7,
            op_id: 3,
            dur_ns: 10_000,
            bytes: 0,
            copy_kind: -1,
            stream: 0,
            ret: 0,
            ..Default::default()
        })
    };
    w.write_batch(&[call(0)]).expect("batch");
    let reader = TraceDb::open(&live).expect("open live");
    assert_eq!(count(&reader, "SELECT COUNT(*) FROM cuda_calls"), 1);
    w.write_batch(&[call(1), call(2)]).expect("batch");
    assert_eq!(count(&reader, "SELECT COUNT(*) FROM cuda_calls"), 3);
    // Finishing while the reader is still open succeeds (the switch back to
    // a rollback journal waits for a later writer), and loses nothing.
    w.finish(1_000_000_100_000)
        .expect("finish with a reader attached");
    drop(reader);
    let after = TraceDb::open(&live).expect("reopen");
    assert_eq!(count(&after, "SELECT COUNT(*) FROM cuda_calls"), 3);
    assert_eq!(
        count(&after, "SELECT stopped_ns FROM sessions"),
        1_000_000_100_000
    );
}
