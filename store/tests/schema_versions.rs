//! Files of every schema version read with the same columns: a version-1
//! native file (the committed H200 investigations), an Ingero file, and a
//! file written now all answer the version-2 queries.

use ingero_store::schema::{COLUMNS_V2, SCHEMA_VERSION};
use ingero_store::{CudaCall, Event, RawPolicy, SessionInfo, TraceDb, TraceWriter};
use std::path::{Path, PathBuf};

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(rel)
}

fn columns(db: &TraceDb, table: &str) -> Vec<String> {
    let stmt = db
        .conn()
        .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
        .expect("prepare");
    stmt.column_names().iter().map(|c| c.to_string()).collect()
}

fn fresh(dir: &Path) -> TraceDb {
    let path = dir.join("v2.db");
    let info = SessionInfo {
        started_ns: 1_000,
        stopped_ns: 2_000_000_000,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("create");
    let call = CudaCall {
        ts_ns: 1_000_000,
        pid: 1,
        tid: 1,
        op_id: 1,
        dur_ns: 10,
        bytes: 0,
        copy_kind: -1,
        stream: 0,
        ret: 0,
        ..Default::default()
    };
    w.write_batch(&[Event::Cuda(call)]).expect("write");
    w.finish(2_000_000_000).expect("finish");
    TraceDb::open(&path).expect("open")
}

#[test]
fn a_new_file_has_every_version_2_column() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = fresh(dir.path());
    let version: i64 = db
        .conn()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    for (table, column, _) in COLUMNS_V2 {
        assert!(
            columns(&db, table).iter().any(|c| c == column),
            "{table}.{column} missing"
        );
    }
    for table in [
        "gpu_devices",
        "gpu_util_samples",
        "gpu_process_samples",
        "gpu_status",
    ] {
        columns(&db, table);
    }
}

#[test]
fn older_files_read_with_the_same_columns_and_empty_gpu_tables() {
    let dir = tempfile::tempdir().expect("tmp");
    let now = fresh(dir.path());
    let old_native = repo("investigations/pytorch-dataloader-starvation-h200.db");
    let ingero = repo("tests/data/ingero-investigations/pytorch-dataloader-starvation.db");
    for path in [old_native, ingero] {
        let db = TraceDb::open(&path).expect("open");
        for table in [
            "cuda_calls",
            "aggregates",
            "host_events",
            "processes",
            "gpu_devices",
            "gpu_util_samples",
            "gpu_process_samples",
            "gpu_status",
            "stack_samples",
            "stack_counts",
            "nccl_calls",
            "nccl_comms",
            "merge_sources",
            "launch_level_changes",
        ] {
            let mut want = columns(&now, table);
            let mut got = columns(&db, table);
            want.sort();
            got.sort();
            assert_eq!(got, want, "{table} of {}", path.display());
        }
        let rows: i64 = db
            .conn()
            .query_row("SELECT count(*) FROM gpu_util_samples", [], |r| r.get(0))
            .expect("count");
        assert_eq!(rows, 0);
        let launches: i64 = db
            .conn()
            .query_row(
                "SELECT count(*) FROM cuda_calls WHERE grid_x = 0 AND block_x = 0",
                [],
                |r| r.get(0),
            )
            .expect("geometry columns");
        let all: i64 = db
            .conn()
            .query_row("SELECT count(*) FROM cuda_calls", [], |r| r.get(0))
            .expect("count");
        assert_eq!(launches, all, "an older file has no geometry");
    }
}

/// Every column name and row count of `table` as `conn` presents it.
fn shape(conn: &rusqlite::Connection, table: &str) -> (Vec<String>, i64) {
    let stmt = conn
        .prepare(&format!("SELECT * FROM {table} LIMIT 0"))
        .expect("prepare");
    let names = stmt.column_names().iter().map(|c| c.to_string()).collect();
    let rows = conn
        .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0))
        .expect("count");
    (names, rows)
}

#[test]
fn a_second_reader_presents_the_same_tables_or_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let now = fresh(dir.path());
    let old = TraceDb::open(&repo(
        "investigations/pytorch-dataloader-starvation-h200.db",
    ))
    .expect("open old");
    for db in [&now, &old] {
        let second = db.reader().expect("a native file opens a second reader");
        for table in [
            "cuda_calls",
            "host_events",
            "aggregates",
            "stack_samples",
            "nccl_calls",
            "gpu_util_samples",
            "launch_level_changes",
        ] {
            assert_eq!(shape(db.conn(), table), shape(&second, table), "{table}");
        }
    }
    // A foreign file is mapped in memory on its own connection: no second one.
    let ingero = TraceDb::open(&repo(
        "tests/data/ingero-investigations/pytorch-dataloader-starvation.db",
    ))
    .expect("open ingero");
    assert!(ingero.reader().is_none());
}

#[test]
fn the_stop_reason_is_recorded_and_reads_as_unknown_in_older_files() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().join("reason.db");
    let info = SessionInfo {
        started_ns: 1_000_000_000,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, RawPolicy::All).expect("create");
    let call = CudaCall {
        ts_ns: 1_100_000_000,
        pid: 1,
        tid: 1,
        op_id: 1,
        dur_ns: 10,
        copy_kind: -1,
        ..Default::default()
    };
    w.write_batch(&[Event::Cuda(call)]).expect("write");
    w.finish_because(2_200_000_000, "SIGTERM").expect("finish");
    let db = TraceDb::open(&path).expect("open");
    let endings = ingero_store::endings::session_endings(db.conn()).expect("endings");
    assert_eq!(endings[0].stop_reason, "SIGTERM");
    assert_eq!(
        endings[0].sentence().as_deref(),
        Some("stopped at +1.2 s: SIGTERM")
    );
    drop(db);
    // The same file as version 9 wrote it: no column, read as unknown.
    let conn = rusqlite::Connection::open(&path).expect("open rw");
    conn.execute_batch("ALTER TABLE sessions DROP COLUMN stop_reason; PRAGMA user_version = 9;")
        .expect("downgrade");
    drop(conn);
    let old = TraceDb::open(&path).expect("open the older file");
    let endings = ingero_store::endings::session_endings(old.conn()).expect("endings");
    assert_eq!(endings[0].stop_reason, "");
    assert_eq!(endings[0].sentence(), None);
    assert!(columns(&old, "sessions").iter().any(|c| c == "stop_reason"));
}
