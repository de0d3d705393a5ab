//! Each scenario's database shows the mechanism behind its cause, checked
//! with plain SQL on the file.

mod common;

use common::{conn, ints, main_pid, main_thread_durs, one, pct};
use ingero_demo::Scenario;

const MIB: i64 = 1024 * 1024;

fn switches(c: &rusqlite::Connection, pid: i64) -> i64 {
    one(
        c,
        "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND pid = ?1",
        [pid],
    )
}

fn mean_cpu(c: &rusqlite::Connection, skip_s: i64) -> f64 {
    c.query_row(
        "SELECT AVG(cpu_pct) FROM system_snapshots WHERE ts_ns >= \
         (SELECT started_ns FROM sessions) + ?1 * 1000000000",
        [skip_s],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn dataloader_starvation_workers_crowd_out_the_main_thread() {
    let c = conn(Scenario::DataloaderStarvation);
    let main = main_pid(&c);
    let workers = ints(
        &c,
        "SELECT pid FROM processes WHERE comm = 'pt_data_worker' ORDER BY pid",
        [],
    );
    assert_eq!(workers.len(), 4);
    let main_switches = switches(&c, main);
    for w in &workers {
        let ppid = one(&c, "SELECT ppid FROM processes WHERE pid = ?1", [w]);
        assert_eq!(ppid, main);
        let forks = one(
            &c,
            "SELECT COUNT(*) FROM host_events WHERE kind = 4 AND pid = ?1 AND arg = ?2",
            [main, *w],
        );
        assert_eq!(forks, 1, "fork of {w}");
        assert!(switches(&c, *w) > main_switches, "worker {w}");
        let pages = one(
            &c,
            "SELECT COUNT(*) FROM host_events WHERE kind = 3 AND pid = ?1",
            [w],
        );
        assert!(pages > 1000, "worker {w}: {pages} page allocations");
    }
    // The main thread is preempted (switched out while runnable) and waits.
    let preempted = one(
        &c,
        "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND tid = ?1 AND arg = 1",
        [main],
    );
    assert!(preempted > 100, "{preempted}");
    let launches = main_thread_durs(&c, "cudaLaunchKernel");
    let (p50, p99) = (pct(&launches, 0.5), pct(&launches, 0.99));
    assert!(p99 > 10 * p50, "launch p50 {p50} p99 {p99}");
    let cpu = mean_cpu(&c, 1);
    assert!(cpu > 90.0, "cpu {cpu}");
}

#[test]
fn cpu_contention_comes_from_unrelated_processes() {
    let c = conn(Scenario::CpuContention);
    let main = main_pid(&c);
    let children = one(&c, "SELECT COUNT(*) FROM processes WHERE ppid = ?1", [main]);
    assert_eq!(children, 0);
    let forks = one(
        &c,
        "SELECT COUNT(*) FROM host_events WHERE kind = 4 AND pid = ?1",
        [main],
    );
    assert_eq!(forks, 0);
    let hogs = ints(
        &c,
        "SELECT pid FROM processes WHERE comm IN ('stress-ng-cpu', 'ffmpeg')",
        [],
    );
    assert!(hogs.len() >= 5);
    let hog_switches: i64 = hogs.iter().map(|p| switches(&c, *p)).sum();
    assert!(hog_switches > switches(&c, main));
    let launches = main_thread_durs(&c, "cudaLaunchKernel");
    let (p50, p99) = (pct(&launches, 0.5), pct(&launches, 0.99));
    assert!(p99 > 10 * p50, "launch p50 {p50} p99 {p99}");
    // Once stress-ng is running the host is saturated.
    let cpu = mean_cpu(&c, 6);
    assert!(cpu > 95.0, "cpu {cpu}");
    let preempted = one(
        &c,
        "SELECT COUNT(*) FROM host_events WHERE kind = 1 AND tid = ?1 AND arg = 1",
        [main],
    );
    assert!(preempted > 100, "{preempted}");
}

#[test]
fn pageable_memcpy_is_slow_and_blocks_the_host() {
    let c = conn(Scenario::PageableMemcpy);
    let main = main_pid(&c);
    let (bytes, dur, n): (i64, i64, i64) = c
        .query_row(
            "SELECT SUM(bytes), SUM(dur_ns), COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
             WHERE o.name = 'cudaMemcpyAsync' AND c.copy_kind = 1 AND c.pid = ?1",
            [main],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert!(n > 100);
    let gbps = bytes as f64 / dur as f64;
    assert!(gbps < 8.0 && gbps > 1.0, "{gbps} GB/s");
    let smallest = one(
        &c,
        "SELECT MIN(bytes) FROM cuda_calls WHERE op_id = 7 AND pid = ?1",
        [main],
    );
    assert!(smallest >= 64 * MIB);
    let pinned = one(
        &c,
        "SELECT COUNT(*) FROM cuda_calls c JOIN cuda_ops o ON o.id = c.op_id \
         WHERE o.name IN ('cudaMallocHost', 'cudaHostAlloc') AND c.pid = ?1",
        [main],
    );
    assert_eq!(pinned, 0);
    // Page allocations happen on the copying thread, mostly inside the copies.
    let total = one(
        &c,
        "SELECT COUNT(*) FROM host_events WHERE kind = 3 AND tid = ?1",
        [main],
    );
    let copies: Vec<(i64, i64)> = {
        let mut st = c
            .prepare(
                "SELECT ts_ns, ts_ns + dur_ns FROM cuda_calls WHERE op_id = 7 AND tid = ?1 \
                 ORDER BY ts_ns",
            )
            .unwrap();
        st.query_map([main], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    let pages = ints(
        &c,
        "SELECT ts_ns FROM host_events WHERE kind = 3 AND tid = ?1 ORDER BY ts_ns",
        [main],
    );
    let inside = pages
        .iter()
        .filter(|ts| {
            let i = copies.partition_point(|(start, _)| start <= *ts);
            i > 0 && **ts <= copies[i - 1].1
        })
        .count() as i64;
    assert!(total > 1000 && inside * 10 > total * 9, "{inside}/{total}");
}

#[test]
fn periodic_malloc_spike_recurs_at_a_regular_period() {
    let c = conn(Scenario::PeriodicMallocSpike);
    let mallocs = main_thread_durs(&c, "cudaMalloc");
    let median = pct(&mallocs, 0.5);
    assert!(median < 100_000, "median {median}");
    let pid = main_pid(&c);
    let slow: Vec<(i64, i64)> = {
        let mut st = c
            .prepare(
                "SELECT ts_ns, dur_ns FROM cuda_calls WHERE op_id = 1 AND pid = ?1 \
                 AND dur_ns > ?2 ORDER BY ts_ns",
            )
            .unwrap();
        st.query_map([pid, 10 * median], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(|r| r.unwrap())
            .collect()
    };
    for (_, d) in &slow {
        assert!(*d < 100 * median, "spike {d} vs median {median}");
    }
    // Group slow calls into episodes and check their spacing.
    let mut starts: Vec<i64> = Vec::new();
    for (ts, _) in &slow {
        if starts.last().is_none_or(|s| ts - s > 1_000_000_000) {
            starts.push(*ts);
        }
    }
    assert!(starts.len() >= 10, "{} episodes", starts.len());
    let gaps: Vec<i64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let mean = gaps.iter().sum::<i64>() as f64 / gaps.len() as f64;
    for g in &gaps {
        assert!(
            ((*g as f64) - mean).abs() < 0.1 * mean,
            "gap {g} vs mean {mean}"
        );
    }
    // Each episode includes a long device-wide synchronisation.
    for s in &starts {
        let stall = one(
            &c,
            "SELECT COALESCE(MAX(dur_ns), 0) FROM cuda_calls WHERE op_id = 6 AND pid = ?1 \
             AND ts_ns BETWEEN ?2 AND ?2 + 100000000",
            [pid, *s],
        );
        assert!(stall > 2_000_000, "sync stall {stall} after {s}");
    }
}

#[test]
fn cold_start_first_calls_are_orders_of_magnitude_slower() {
    let c = conn(Scenario::ColdStart);
    for op in ["cudaMalloc", "cudaLaunchKernel", "cuLaunchKernel"] {
        let d = main_thread_durs(&c, op);
        let median = pct(&d, 0.5);
        assert!(d[0] > 100 * median, "{op}: first {} median {median}", d[0]);
    }
    // The slow launches all happen at the start.
    let pid = main_pid(&c);
    let last_slow = one(
        &c,
        "SELECT MAX(ts_ns) - (SELECT started_ns FROM sessions) FROM cuda_calls \
         WHERE op_id = 3 AND pid = ?1 AND dur_ns > 1000000",
        [pid],
    );
    assert!(last_slow < 5_000_000_000, "{last_slow}");
}
