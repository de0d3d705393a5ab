//! Launch geometry, the newer CUDA API and nested calls, captured with real
//! uprobes from the stand-in workload (`workload --new-api`, the stand-in
//! runtime calling its driver as the real one does) and checked with SQL:
//! raw rows, exact aggregates with every raw row kept and with raw rows
//! sampled away, classes of the new ops, nested flags. Each probe path runs:
//! multi-uprobe links and one link per function.

mod common;

use common::one;

use ingero_probes::{start, CaptureConfig, StopReason, Target};
use ingero_store::RawPolicy;
use rusqlite::Connection;
use std::path::Path;
use std::sync::Mutex;

/// Rounds of the new-API loop.
const N: i64 = 40;
/// Threads per launch of each launch in the loop (grid x block).
const RT_THREADS: i64 = 4 * 2 * 128;
const EXC_THREADS: i64 = 64 * 32 * 2 * 256 * 2;
const EX_THREADS: i64 = 16 * 16 * 32 * 8;
const PTSZ_THREADS: i64 = 3 * 96;
const STREAM: i64 = 0x5157;
const STREAM2: i64 = 0x5158;

/// One capture at a time: they share the CPUs and the kernel's probes.
static CAPTURES: Mutex<()> = Mutex::new(());

fn capture(db: &Path, multi_uprobes: bool, raw: RawPolicy) {
    let dir = common::standin();
    let argv: Vec<String> = vec![
        "env".into(),
        "INGERO_STANDIN_US=20".into(),
        "INGERO_STANDIN_NESTED=1".into(),
        dir.join("workload").display().to_string(),
        "--new-api".into(),
        "--iters".into(),
        N.to_string(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(std::time::Duration::from_secs(30));
    cfg.multi_uprobes = multi_uprobes;
    // Every raw row kept means every launch timed, with its own row too.
    if raw == RawPolicy::All {
        cfg.launch_sample = 0;
        cfg.launch_rows = 1;
    }
    cfg.raw = raw;
    // The rows' arguments are checked here: no call folding (each op's rows
    // could otherwise all be counted in the kernel, its budget slot shared).
    cfg.call_rows = 0;
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert_eq!(summary.command_exit, Some(0));
    assert_eq!(summary.status.drops, 0);
}

/// Sums of `columns` over the CUDA aggregate rows of op `name`.
fn agg(conn: &Connection, name: &str, columns: &str) -> Vec<i64> {
    let n = columns.split(',').count();
    let sums: Vec<String> = columns
        .split(',')
        .map(|c| format!("COALESCE(SUM(a.{}), 0)", c.trim()))
        .collect();
    let sql = format!(
        "SELECT {} FROM aggregates a JOIN cuda_ops o ON o.id = a.code \
         WHERE a.source = 1 AND o.name = ?1",
        sums.join(", ")
    );
    conn.query_row(&sql, [name], |r| (0..n).map(|i| r.get(i)).collect())
        .expect(&sql)
}

/// What every capture must show in its aggregates, whatever was kept raw.
fn check_aggregates(conn: &Connection) {
    let cols = "count, nested_count, sum_threads, small_launches, nested_threads, \
                nested_small_launches";
    let expect: &[(&str, [i64; 6])] = &[
        ("cudaLaunchKernel", [N, 0, N * RT_THREADS, N, 0, 0]),
        (
            "cuLaunchKernel",
            [N, N, N * RT_THREADS, N, N * RT_THREADS, N],
        ),
        ("cudaLaunchKernelExC", [N, 0, N * EXC_THREADS, 0, 0, 0]),
        // Once nested in cudaLaunchKernelExC, once called directly; 65,536
        // threads is still a small launch (the bound is inclusive).
        (
            "cuLaunchKernelEx",
            [
                2 * N,
                N,
                N * (EXC_THREADS + EX_THREADS),
                N,
                N * EXC_THREADS,
                0,
            ],
        ),
        ("cudaLaunchKernel_ptsz", [N, 0, N * PTSZ_THREADS, N, 0, 0]),
        (
            "cuLaunchKernel_ptsz",
            [N, N, N * PTSZ_THREADS, N, N * PTSZ_THREADS, N],
        ),
    ];
    for (name, want) in expect {
        assert_eq!(agg(conn, name, cols).as_slice(), want, "{name}: {cols}");
    }
    let pairs = [
        ("cudaGraphLaunch", "cuGraphLaunch"),
        ("cudaMallocAsync", "cuMemAllocAsync"),
        ("cudaFreeAsync", "cuMemFreeAsync"),
        ("cudaEventRecord", "cuEventRecord"),
        ("cudaStreamWaitEvent", "cuStreamWaitEvent"),
        ("cudaEventQuery", "cuEventQuery"),
        ("cudaEventSynchronize", "cuEventSynchronize"),
        ("cudaStreamSynchronize_ptsz", "cuStreamSynchronize_ptsz"),
    ];
    for (runtime, driver) in pairs {
        assert_eq!(
            agg(conn, runtime, "count, nested_count"),
            [N, 0],
            "{runtime}"
        );
        assert_eq!(agg(conn, driver, "count, nested_count"), [N, N], "{driver}");
    }
    assert_eq!(
        agg(conn, "cudaMallocAsync", "sum_bytes, nested_bytes"),
        [N * 65536, 0]
    );
    assert_eq!(
        agg(conn, "cuMemAllocAsync", "sum_bytes, nested_bytes"),
        [N * 65536, N * 65536]
    );
    assert_eq!(
        agg(conn, "cuMemcpyDtoD_v2", "count, sum_bytes, nested_count"),
        [1, 4096, 0]
    );
    // Counting outer calls only: each call of the application once.
    let outer_calls = 12 * N + 1;
    let nested_calls = 11 * N;
    assert_eq!(
        one(
            conn,
            "SELECT SUM(count - nested_count) FROM aggregates WHERE source = 1",
            []
        ),
        outer_calls
    );
    assert_eq!(
        one(
            conn,
            "SELECT SUM(nested_count) FROM aggregates WHERE source = 1",
            []
        ),
        nested_calls
    );
    assert_eq!(
        one(
            conn,
            &format!(
                "SELECT SUM({}) FROM aggregates WHERE source = 1",
                ingero_store::nesting::outer_total("sum_threads").expect("split")
            ),
            []
        ),
        N * (RT_THREADS + EXC_THREADS + EX_THREADS + PTSZ_THREADS)
    );
}

/// Classes of the new ops, as stored in the file's catalogue.
fn check_classes(conn: &Connection) {
    let want = [
        ("cudaLaunchKernelExC", "launch"),
        ("cuLaunchKernelEx", "launch"),
        ("cudaLaunchKernel_ptsz", "launch"),
        ("cudaGraphLaunch", "graph_launch"),
        ("cuGraphLaunch", "graph_launch"),
        ("cudaMallocAsync", "alloc_async"),
        ("cuMemAllocAsync", "alloc_async"),
        ("cudaFreeAsync", "free_async"),
        ("cudaEventRecord", "event_record"),
        ("cudaStreamWaitEvent", "stream_wait"),
        ("cudaEventQuery", "query"),
        ("cuEventSynchronize", "sync"),
        ("cudaStreamSynchronize_ptsz", "sync"),
        ("cuMemcpyDtoD_v2", "copy"),
    ];
    for (name, class) in want {
        let got: String = conn
            .query_row("SELECT class FROM cuda_ops WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .expect(name);
        assert_eq!(got, class, "{name}");
    }
}

/// The launch columns, stream and nested flag of the raw rows of `name`,
/// distinct.
fn launch_rows(conn: &Connection, name: &str) -> Vec<[i64; 9]> {
    let mut stmt = conn
        .prepare(
            "SELECT DISTINCT grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_mem, \
             stream, nested FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.name = ?1 ORDER BY nested, grid_x",
        )
        .expect("prepare");
    let rows = stmt
        .query_map([name], |r| {
            let mut v = [0i64; 9];
            for (i, x) in v.iter_mut().enumerate() {
                *x = r.get(i)?;
            }
            Ok(v)
        })
        .expect("query");
    rows.map(|r| r.expect("row")).collect()
}

/// Raw rows: geometry, streams, nesting, whatever share of them was kept.
fn check_raw_rows(conn: &Connection) {
    let rt = [4, 2, 1, 128, 1, 1, 1024, STREAM];
    let exc = [64, 32, 2, 256, 2, 1, 4096, STREAM2];
    let ex = [16, 16, 1, 32, 8, 1, 2048, STREAM2];
    let pt = [3, 1, 1, 96, 1, 1, 0, 0];
    let with = |g: [i64; 8], nested: i64| -> [i64; 9] {
        let mut v = [0; 9];
        v[..8].copy_from_slice(&g);
        v[8] = nested;
        v
    };
    assert_eq!(launch_rows(conn, "cudaLaunchKernel"), [with(rt, 0)]);
    assert_eq!(launch_rows(conn, "cuLaunchKernel"), [with(rt, 1)]);
    assert_eq!(launch_rows(conn, "cudaLaunchKernelExC"), [with(exc, 0)]);
    assert_eq!(launch_rows(conn, "cudaLaunchKernel_ptsz"), [with(pt, 0)]);
    assert_eq!(launch_rows(conn, "cuLaunchKernel_ptsz"), [with(pt, 1)]);
    let ex_rows = launch_rows(conn, "cuLaunchKernelEx");
    assert!(
        ex_rows
            .iter()
            .all(|r| *r == with(ex, 0) || *r == with(exc, 1)),
        "{ex_rows:?}"
    );
    // Calls that are not kernel launches carry no geometry.
    assert_eq!(
        one(
            conn,
            "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.class != 'launch' AND grid_x + grid_y + grid_z + block_x + block_y \
             + block_z + shared_mem != 0",
            []
        ),
        0
    );
    // Runtime calls are never nested; every nested row lies inside a
    // runtime call of its thread.
    assert_eq!(
        one(
            conn,
            "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.api = 'runtime' AND c.nested != 0",
            []
        ),
        0
    );
    let args = |name: &str| -> (i64, i64, i64) {
        conn.query_row(
            "SELECT bytes, copy_kind, stream FROM cuda_calls c JOIN cuda_ops o \
             ON o.id = c.op_id WHERE o.name = ?1 LIMIT 1",
            [name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect(name)
    };
    assert_eq!(args("cudaGraphLaunch"), (0, -1, STREAM));
    assert_eq!(args("cuGraphLaunch"), (0, -1, STREAM));
    assert_eq!(args("cudaMallocAsync"), (65536, -1, STREAM));
    assert_eq!(args("cuMemAllocAsync"), (65536, -1, STREAM));
    assert_eq!(args("cudaFreeAsync"), (0, -1, STREAM));
    assert_eq!(args("cudaEventRecord"), (0, -1, STREAM));
    assert_eq!(args("cudaStreamWaitEvent"), (0, -1, STREAM2));
    assert_eq!(args("cuStreamWaitEvent"), (0, -1, STREAM2));
    assert_eq!(args("cuMemcpyDtoD_v2"), (4096, 3, 0));
}

/// With every raw row kept, each nested row lies strictly inside a runtime
/// call of the same thread (the timing the flag stands for), and the raw
/// flags count what the aggregates say.
fn check_nesting_against_intervals(conn: &Connection) {
    let outside = one(
        conn,
        "SELECT COUNT(*) FROM cuda_calls d WHERE d.nested = 1 AND NOT EXISTS ( \
           SELECT 1 FROM cuda_calls r JOIN cuda_ops o ON o.id = r.op_id \
           WHERE o.api = 'runtime' AND r.tid = d.tid AND r.ts_ns < d.ts_ns \
             AND d.ts_ns + d.dur_ns < r.ts_ns + r.dur_ns)",
        [],
    );
    assert_eq!(outside, 0, "nested rows outside any runtime call");
    assert_eq!(
        one(conn, "SELECT COUNT(*) FROM cuda_calls WHERE nested = 1", []),
        11 * N
    );
    assert_eq!(
        one(
            conn,
            &format!(
                "SELECT COUNT(*) FROM cuda_calls WHERE {}",
                ingero_store::nesting::OUTER_ROWS
            ),
            []
        ),
        12 * N + 1
    );
}

#[test]
fn every_raw_row_multi_uprobe_links() {
    if !common::can_trace() {
        return;
    }
    let _one = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("all.db");
    capture(&db, true, RawPolicy::All);
    let conn = Connection::open(&db).expect("open");
    check_aggregates(&conn);
    check_classes(&conn);
    check_raw_rows(&conn);
    check_nesting_against_intervals(&conn);
    assert_eq!(
        one(
            &conn,
            "SELECT SUM(count) - SUM(stored) FROM aggregates WHERE source = 1",
            []
        ),
        0
    );
}

#[test]
fn sampled_raw_rows_one_link_per_function() {
    if !common::can_trace() {
        return;
    }
    let _one = CAPTURES.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("sampled.db");
    let raw = RawPolicy::Sampled {
        per_second: 1,
        always_keep_ns: 1_000_000,
    };
    capture(&db, false, raw);
    let conn = Connection::open(&db).expect("open");
    check_aggregates(&conn);
    check_classes(&conn);
    check_raw_rows(&conn);
    // Most raw rows were sampled away, and the aggregates say how many.
    let (count, stored) = conn
        .query_row(
            "SELECT SUM(count), SUM(stored) FROM aggregates WHERE source = 1",
            [],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
        )
        .expect("totals");
    assert!(stored * 4 < count, "{stored} of {count} rows kept");
    assert_eq!(one(&conn, "SELECT COUNT(*) FROM cuda_calls", []), stored);
}
