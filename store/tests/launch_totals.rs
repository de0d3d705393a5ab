//! Launch geometry and nested calls through the writer: raw rows keep the
//! columns, aggregates count every launch exactly when raw rows are sampled.

use ingero_store::nesting::{outer_total, OUTER_ROWS};
use ingero_store::{CudaCall, Event, RawPolicy, SessionInfo, TraceDb, TraceWriter};

const T0: i64 = 1_000_000_000_000;

fn calls() -> Vec<Event> {
    let mut out = Vec::new();
    for i in 0..100 {
        let outer = CudaCall {
            ts_ns: T0 + i * 100_000,
            pid: 7,
            tid: 7,
            op_id: 3,
            dur_ns: 20_000,
            copy_kind: -1,
            stream: 0x5157,
            grid: [4, 2, 1],
            block: [128, 1, 1],
            shared_mem: 1024,
            ..CudaCall::default()
        };
        out.push(Event::Cuda(outer));
        out.push(Event::Cuda(CudaCall {
            ts_ns: outer.ts_ns + 1_000,
            op_id: 101,
            dur_ns: 10_000,
            nested: true,
            ..outer
        }));
    }
    out
}

fn write(dir: &std::path::Path, raw: RawPolicy) -> TraceDb {
    let path = dir.join("t.db");
    let info = SessionInfo {
        started_ns: T0,
        ..Default::default()
    };
    let mut w = TraceWriter::create(&path, &info, raw).expect("create");
    w.write_batch(&calls()).expect("write");
    w.finish(T0 + 1_000_000_000).expect("finish");
    TraceDb::open(&path).expect("open")
}

fn one(db: &TraceDb, sql: &str) -> i64 {
    db.conn().query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn sampled_raw_rows_leave_launch_totals_exact() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = write(
        dir.path(),
        RawPolicy::Sampled {
            per_second: 1,
            always_keep_ns: 1_000_000,
        },
    );
    assert_eq!(one(&db, "SELECT COUNT(*) FROM cuda_calls"), 2);
    assert_eq!(one(&db, "SELECT SUM(count) FROM aggregates"), 200);
    assert_eq!(
        one(&db, "SELECT SUM(sum_threads) FROM aggregates"),
        200 * 1024
    );
    assert_eq!(one(&db, "SELECT SUM(small_launches) FROM aggregates"), 200);
    assert_eq!(one(&db, "SELECT SUM(nested_count) FROM aggregates"), 100);
    assert_eq!(
        one(&db, "SELECT SUM(nested_dur_ns) FROM aggregates"),
        100 * 10_000
    );
    let outer = outer_total("sum_threads").expect("split");
    assert_eq!(
        one(&db, &format!("SELECT SUM({outer}) FROM aggregates")),
        100 * 1024
    );
}

#[test]
fn raw_rows_keep_geometry_and_the_nested_flag() {
    let dir = tempfile::tempdir().expect("tmp");
    let db = write(dir.path(), RawPolicy::All);
    let row: (i64, i64, i64, i64, i64, i64, i64) = db
        .conn()
        .query_row(
            "SELECT DISTINCT grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem \
             FROM cuda_calls",
            [],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .expect("one geometry");
    assert_eq!(row, (4, 2, 1, 128, 1, 1, 1024));
    assert_eq!(
        one(
            &db,
            "SELECT COUNT(*) FROM cuda_calls WHERE nested = 1 AND op_id = 101"
        ),
        100
    );
    assert_eq!(
        one(
            &db,
            &format!("SELECT COUNT(*) FROM cuda_calls WHERE {OUTER_ROWS}")
        ),
        100
    );
}

#[test]
fn files_before_version_2_say_nesting_was_not_recorded() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../investigations/pytorch-dataloader-starvation-h200.db");
    let db = TraceDb::open(&path).expect("open");
    assert_eq!(
        one(&db, "SELECT COUNT(*) FROM cuda_calls WHERE nested != -1"),
        0
    );
    assert!(
        one(
            &db,
            &format!("SELECT COUNT(*) FROM cuda_calls WHERE {OUTER_ROWS}")
        ) > 0
    );
}
