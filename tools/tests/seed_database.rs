//! The analysis engine on Ingero's recorded DataLoader-starvation database:
//! every figure is checked against plain SQL on the file itself.

use ingero_store::TraceDb;
use ingero_tools::chains::Cause;
use ingero_tools::explain::explain;
use ingero_tools::percentile::nearest_rank;
use ingero_tools::processes::Role;
use ingero_tools::Scope;
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;

fn seed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
}

/// A plain read-only connection to the file, in its own (Ingero) schema.
fn raw() -> Connection {
    Connection::open_with_flags(seed(), OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open raw")
}

fn durations(conn: &Connection, op_name: &str) -> Vec<i64> {
    let mut stmt = conn
        .prepare(
            "SELECT e.duration FROM events e JOIN ops o ON o.source_id = e.source AND o.op_id = e.op \
             WHERE o.name = ?1 ORDER BY e.duration",
        )
        .expect("prepare");
    stmt.query_map([op_name], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<Vec<i64>>>()
        .expect("rows")
}

fn agg(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).expect(sql)
}

#[test]
fn op_statistics_match_sql_on_the_file() {
    let db = TraceDb::open(&seed()).expect("open");
    let report = explain(&db, &Scope::ALL).expect("explain");
    let raw = raw();
    let op = |name: &str| {
        report
            .stats
            .ops
            .iter()
            .find(|o| o.op == name)
            .unwrap_or_else(|| panic!("{name} missing"))
            .clone()
    };

    // cudaStreamSync: every call is a raw row, so the figures are exact.
    let sync = durations(&raw, "cudaStreamSync");
    let s = op("cudaStreamSynchronize");
    assert!(s.exact);
    assert_eq!(s.count, sync.len() as i64);
    assert_eq!(s.p50_ns, nearest_rank(&sync, 50.0));
    assert_eq!(s.p99_ns, nearest_rank(&sync, 99.0));
    assert_eq!(s.max_ns, *sync.last().expect("rows"));
    // The file supports a p50 of about 25 us, but not a 42 ms p99.
    let p50 = s.p50_ns.expect("p50");
    assert!((20_000..35_000).contains(&p50), "p50 {p50}");
    assert!(s.p99_ns.expect("p99") < 1_000_000);

    // cudaLaunchKernel: sampled; percentiles from the raw rows, count and max from the totals.
    let launch = durations(&raw, "cudaLaunchKernel");
    let l = op("cudaLaunchKernel");
    assert!(!l.exact);
    assert_eq!(l.raw_rows, launch.len() as i64);
    assert_eq!(l.p50_ns, nearest_rank(&launch, 50.0));
    assert_eq!(l.p99_ns, nearest_rank(&launch, 99.0));
    let agg_count = agg(
        &raw,
        "SELECT SUM(count) FROM event_aggregates WHERE source = 1 AND op = 3",
    );
    assert_eq!(l.count, agg_count);
    assert_eq!(
        l.max_ns,
        agg(
            &raw,
            "SELECT MAX(max_dur) FROM event_aggregates WHERE source = 1 AND op = 3"
        )
    );
    assert!(l.tail_ratio.expect("ratio") > 300.0);
    assert!(l.basis.contains("sampled"));
}

#[test]
fn per_process_breakdown_matches_sql_on_the_file() {
    let db = TraceDb::open(&seed()).expect("open");
    let report = explain(&db, &Scope::ALL).expect("explain");
    let raw = raw();
    let b = &report.processes;
    assert_eq!(b.main_pid, Some(2233));
    let proc_row = |pid: i32| {
        b.processes
            .iter()
            .find(|p| p.pid == pid)
            .unwrap_or_else(|| panic!("pid {pid} missing"))
    };
    let main = proc_row(2233);
    assert_eq!(main.role, Role::Main);
    // cudaMemcpyAsync mean and max in the main process, from the file's totals.
    let copy = main
        .ops
        .iter()
        .find(|o| o.op == "cudaMemcpyAsync")
        .expect("copy op");
    let sum = agg(
        &raw,
        "SELECT SUM(sum_dur) FROM event_aggregates WHERE source = 1 AND op = 7 AND pid = 2233",
    );
    let cnt = agg(
        &raw,
        "SELECT SUM(count) FROM event_aggregates WHERE source = 1 AND op = 7 AND pid = 2233",
    );
    assert_eq!(copy.count, cnt);
    assert!((copy.mean_ns - sum as f64 / cnt as f64).abs() < 1.0);
    assert_eq!(
        copy.max_ns,
        agg(
            &raw,
            "SELECT MAX(max_dur) FROM event_aggregates WHERE source = 1 AND op = 7 AND pid = 2233"
        )
    );
    // Ingero files sched_switch rows under the thread's own id; fork
    // children that never appear as the pid of any other row are threads
    // (2258 pt_data_pin, 2259, 2260, 2262 of 2233), counted for their process.
    let threads_of = |pid: i32| {
        format!(
            "SELECT f.arg1 FROM events f WHERE f.source = 3 AND f.op = 7 AND f.pid = {pid} \
             AND NOT EXISTS (SELECT 1 FROM events e WHERE e.pid = f.arg1 \
                             AND NOT (e.source = 3 AND e.op = 1)) \
             AND NOT EXISTS (SELECT 1 FROM event_aggregates a WHERE a.pid = f.arg1 \
                             AND NOT (a.source = 3 AND a.op = 1))"
        )
    };
    for pid in [2233, 2254, 2255, 2256, 2257] {
        let row = proc_row(pid);
        let switches = agg(
            &raw,
            &format!(
                "SELECT SUM(count) FROM event_aggregates WHERE source = 3 AND op = 1 \
                 AND (pid = {pid} OR pid IN ({}))",
                threads_of(pid)
            ),
        );
        let pages = agg(
            &raw,
            &format!(
            "SELECT SUM(count) FROM event_aggregates WHERE source = 3 AND op = 3 AND pid = {pid}"
        ),
        );
        assert_eq!(row.context_switches, switches, "switches of {pid}");
        assert_eq!(row.page_allocs, pages, "page allocs of {pid}");
        if pid != 2233 {
            assert_eq!(row.role, Role::DataloaderWorker, "{pid}");
            assert_eq!(row.ppid, 2233);
        }
    }
    // PyTorch's pin-memory thread (2258, pt_data_pin) is a thread of 2233, not a process.
    assert_eq!(
        agg(
            &raw,
            &format!(
                "SELECT COUNT(*) FROM ({}) WHERE arg1 = 2258",
                threads_of(2233)
            )
        ),
        1
    );
    assert!(b.processes.iter().all(|p| p.pid != 2258));
    // Workers switch far more than the main process's GPU thread, whose
    // off-CPU time is its own (raw rows, switch-in stamps).
    let gpu = main.gpu_thread.as_ref().expect("GPU thread");
    assert_eq!(gpu.tid, 2233);
    assert_eq!(
        gpu.switches,
        agg(
            &raw,
            "SELECT COUNT(*) FROM events WHERE source = 3 AND op = 1 AND tid = 2233"
        )
    );
    assert!(proc_row(2254).context_switches > 10 * gpu.switches);
}

#[test]
fn contention_chain_blames_the_dataloader_workers() {
    let db = TraceDb::open(&seed()).expect("open");
    let report = explain(&db, &Scope::ALL).expect("explain");
    // The input pipeline leads (see the idle test); the workers' contention
    // is found, and ranked by the idle time it explains: the GPU thread's
    // off-CPU time, which this file records without the preemption flag.
    let top = report
        .chains
        .chains
        .iter()
        .find(|c| c.cause == Cause::DataloaderWorkerContention)
        .expect("a worker contention chain");
    let off: i64 = report
        .chains
        .gpu_idle
        .iter()
        .find(|p| p.pid == 2233)
        .map(|p| p.causes.off_cpu_ns())
        .expect("idle of 2233");
    assert!(top.explained_ns <= off, "{} > {off}", top.explained_ns);
    assert_eq!(top.victim_pid, Some(2233));
    for w in [2254, 2255, 2256, 2257] {
        assert!(top.culprit_pids.contains(&w), "worker {w} not blamed");
    }
    let raw = raw();
    let saturated = agg(
        &raw,
        "SELECT COUNT(*) FROM system_snapshots WHERE cpu_pct >= 90",
    );
    let ev = |label: &str| {
        top.evidence
            .iter()
            .find(|e| e.label == label)
            .unwrap_or_else(|| panic!("{label}"))
            .value
    };
    assert_eq!(ev("cpu_saturated_samples") as i64, saturated);
    assert_eq!(ev("cpu_peak"), 100.0);
    assert!(!top.fix.is_empty());
    // The slow launch at start-up is a cold start, not contention.
    assert!(report
        .chains
        .chains
        .iter()
        .any(|c| c.cause == Cause::ColdStart
            && c.affected_ops.contains(&"cudaLaunchKernel".to_string())));
}

#[test]
fn starvation_estimate_matches_sql() {
    let db = TraceDb::open(&seed()).expect("open");
    let report = explain(&db, &Scope::ALL).expect("explain");
    let s = report.starvation.first().expect("estimate");
    assert_eq!((s.pid, s.gpu_thread), (2233, 2233));
    let raw = raw();
    let first = agg(
        &raw,
        "SELECT MIN(timestamp) FROM events WHERE source IN (1, 4) AND tid = 2233",
    );
    let last = agg(
        &raw,
        "SELECT MAX(timestamp + duration) FROM events WHERE source IN (1, 4) AND tid = 2233",
    );
    assert_eq!(s.wall_ns, last - first);
    // Ingero stamps a switch when the thread comes back: off-CPU from timestamp - duration.
    let off = agg(&raw, &format!(
        "SELECT SUM(MIN(timestamp, {last}) - MAX(timestamp - duration, {first})) FROM events \
         WHERE source = 3 AND op = 1 AND tid = 2233 AND timestamp - duration BETWEEN {first} AND {last}"
    ));
    assert_eq!(s.off_cpu_ns, off);
    // CUDA time covers every call (scaled from sampled rows to the totals).
    let total = agg(
        &raw,
        "SELECT SUM(sum_dur) FROM event_aggregates WHERE source IN (1, 4) AND pid = 2233",
    );
    assert!(
        (s.cuda_api_ns - total).abs() <= total / 100,
        "{} vs {total}",
        s.cuda_api_ns
    );
    assert!(s.starved_share > 0.95);
}

#[test]
fn windows_are_relative_to_the_capture_end() {
    let db = TraceDb::open(&seed()).expect("open");
    let scope = Scope {
        window: ingero_store::TimeWindow::parse(Some("30s"), None).expect("window"),
        pid: None,
    };
    let r = explain(&db, &scope).expect("explain");
    assert!((r.window.duration_s - 30.0).abs() < 1e-6);
    let end = agg(&raw(), "SELECT stopped_at FROM sessions");
    assert_eq!(r.window.end_ns, end);
    // The direct-indexing copies happened long before the last 30 s.
    assert!(r.stats.ops.iter().all(|o| o.op != "cudaMalloc"));
}

#[test]
fn top_finding_is_the_idle_share_and_the_input_pipeline() {
    let db = TraceDb::open(&seed()).expect("open");
    let report = explain(&db, &Scope::ALL).expect("explain");
    let raw = raw();
    let idle = report.chains.gpu_idle.first().expect("idle breakdown");
    assert_eq!(idle.pid, 2233);
    // The process lives through the whole capture; its CUDA API time is tiny.
    let start = agg(&raw, "SELECT started_at FROM sessions");
    let stop = agg(&raw, "SELECT stopped_at FROM sessions");
    let last_seen = agg(
        &raw,
        "SELECT MAX(t) FROM (SELECT seen_at AS t FROM process_names WHERE pid = 2233 \
         UNION ALL SELECT MAX(timestamp) FROM events WHERE pid = 2233)",
    );
    assert_eq!(idle.span_ns, last_seen.min(stop) - start);
    let api_sum = agg(
        &raw,
        "SELECT SUM(sum_dur) FROM event_aggregates WHERE source IN (1, 4) AND pid = 2233",
    );
    let longest = agg(
        &raw,
        "SELECT MAX(duration) FROM events WHERE source IN (1, 4) AND pid = 2233",
    );
    let upper = 1.0 - longest as f64 / (stop - start) as f64;
    // Busy can only exceed the summed API time by the queued-work intervals,
    // which end in syncs that waited; their total is bounded by the sync rows.
    let waited_syncs = agg(&raw, "SELECT COALESCE(SUM(duration), 0) FROM events e JOIN ops o \
        ON o.source_id = e.source AND o.op_id = e.op WHERE e.pid = 2233 AND o.name LIKE '%Sync%' AND e.duration >= 100000");
    let first = agg(
        &raw,
        "SELECT MIN(timestamp) FROM events WHERE source IN (1, 4) AND pid = 2233",
    );
    let last_sync = agg(&raw, "SELECT MAX(timestamp + duration) FROM events WHERE source IN (1, 4) AND pid = 2233 AND duration >= 100000");
    let lower = 1.0
        - (api_sum + (last_sync - first).min(waited_syncs * 100)) as f64 / (stop - start) as f64;
    assert!(
        idle.idle_share <= upper && idle.idle_share >= lower.min(0.98),
        "{}",
        idle.idle_share
    );
    assert!(
        idle.idle_share > 0.98,
        "GPU idle at least 98%: {}",
        idle.idle_share
    );
    assert_eq!(idle.busy_ns + idle.host_wait_ns, idle.span_ns);
    // Host wait is dominated by on-CPU work of the launching thread.
    assert!(idle.causes.host_compute_ns > 40_000_000_000);
    let top = report.chains.chains.first().expect("a chain");
    assert_eq!(top.cause, Cause::HostInputPipeline);
    assert!(top.summary.contains("GPU idle 99."), "{}", top.summary);
    // Named a DataLoader pipeline because its worker processes are in the file.
    assert!(top.summary.contains("DataLoader"), "{}", top.summary);
    assert!(top.summary.contains("fetch/collate"), "{}", top.summary);
    // Workers are present: the fix makes each batch cheaper, it does not
    // ask for workers the job already has.
    assert!(top.fix.contains("BatchSampler"), "{}", top.fix);
    assert!(!top.fix.contains("num_workers"), "{}", top.fix);
}

#[test]
fn partial_windows_count_only_what_lies_inside() {
    // The file keeps per-minute totals; the last 60 s cut the first minute.
    // Totals of that cut minute must not leak in: only raw rows inside the
    // window count there, and sampled ops say their figures are not exact.
    let db = TraceDb::open(&seed()).expect("open");
    let scope = Scope {
        window: ingero_store::TimeWindow::parse(Some("60s"), None).expect("window"),
        pid: None,
    };
    let r = explain(&db, &scope).expect("explain");
    let raw = raw();
    let hi = agg(&raw, "SELECT stopped_at FROM sessions");
    let lo = hi - 60_000_000_000;
    let copy = r
        .stats
        .ops
        .iter()
        .find(|o| o.op == "cudaMemcpyAsync")
        .expect("copy");
    // Minute buckets start at multiples of 60 s; the last one lies wholly inside the window.
    let last_bucket = agg(&raw, "SELECT MAX(bucket) FROM event_aggregates");
    let in_last = agg(&raw, &format!(
        "SELECT COALESCE(SUM(count), 0) FROM event_aggregates WHERE source = 1 AND op = 7 AND bucket = {last_bucket}"
    ));
    let raw_edge = agg(
        &raw,
        &format!(
        "SELECT COUNT(*) FROM events WHERE source = 1 AND op = 7 AND timestamp BETWEEN {lo} AND {}",
        last_bucket - 1
    ),
    );
    assert_eq!(copy.count, in_last + raw_edge);
    assert!(
        copy.count < 21,
        "the whole capture's 21 copies must not leak in"
    );
    let sync = r
        .stats
        .ops
        .iter()
        .find(|o| o.op == "cudaStreamSynchronize")
        .expect("sync");
    let syncs = agg(&raw, &format!(
        "SELECT COUNT(*) FROM events WHERE source = 1 AND op = 5 AND timestamp BETWEEN {lo} AND {hi}"
    ));
    assert_eq!(sync.count, syncs);
    assert!(sync.exact);
}
