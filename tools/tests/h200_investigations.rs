//! Regression cases from real captures on an NVIDIA H200 (PyTorch 2.11, CUDA
//! 13), recorded with `ingero trace` (see investigations/README.md): each one
//! must keep naming its known host-side cause, with figures that match SQL on
//! the file.

use ingero_store::TraceDb;
use ingero_tools::chains::Cause;
use ingero_tools::explain::{explain, Report};
use ingero_tools::processes::Role;
use ingero_tools::Scope;
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;

fn path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../investigations")
        .join(name)
}

fn report(name: &str) -> Report {
    let db = TraceDb::open(&path(name)).expect("open");
    explain(&db, &Scope::ALL).expect("explain")
}

fn sql(name: &str, q: &str) -> i64 {
    Connection::open_with_flags(path(name), OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("open raw")
        .query_row(q, [], |r| r.get(0))
        .expect(q)
}

#[test]
fn seed_benchmark_on_h200_is_input_pipeline_bound() {
    let name = "pytorch-dataloader-starvation-h200.db";
    let r = report(name);
    let top = &r.chains.chains[0];
    assert_eq!(top.cause, Cause::HostInputPipeline, "{}", top.summary);
    let idle = &r.chains.gpu_idle[0];
    assert!(idle.active_idle_share > 0.9, "{}", idle.active_idle_share);
    // API time never exceeds what the totals say was spent in CUDA calls.
    let api = sql(
        name,
        "SELECT SUM(sum_dur_ns) FROM aggregates WHERE source = 1",
    );
    assert!(idle.api_ns <= api);
    assert!(idle.causes.host_compute_ns > idle.causes.waiting_on_workers_ns);
    // The four num_workers=4 workers are recognised by name, forked by main.
    let workers: Vec<_> = r
        .processes
        .processes
        .iter()
        .filter(|p| p.role == Role::DataloaderWorker)
        .collect();
    assert_eq!(workers.len(), 4);
    assert!(workers.iter().all(|w| Some(w.ppid) == r.processes.main_pid));
    assert!(r
        .chains
        .chains
        .iter()
        .any(|c| c.cause == Cause::PageableMemcpy));
    let copies = sql(
        name,
        "SELECT SUM(count) FROM aggregates a JOIN cuda_ops o ON o.id = a.code \
         WHERE a.source = 1 AND o.name = 'cudaMemcpyAsync'",
    );
    let stat = r
        .stats
        .ops
        .iter()
        .find(|o| o.op == "cudaMemcpyAsync")
        .expect("copies");
    assert_eq!(stat.count, copies);
}

#[test]
fn pageable_copies_are_told_apart_from_pinned_ones() {
    let r = report("pageable-vs-pinned-h200.db");
    // The loop's largest idle part is the script's two 1.0 s sleeps
    // between its phases (pageable_pinned.py): the thread blocked, with no
    // stacks in this older capture, so it leads as a finding of the state
    // alone, ranked by its time.
    let first = &r.chains.chains[0];
    assert_eq!(first.cause, Cause::IdleCode, "{}", first.summary);
    assert_eq!(first.part.as_deref(), Some("off_cpu_blocked"));
    assert!(
        (2_000_000_000..2_100_000_000).contains(&first.explained_ns),
        "{}",
        first.summary
    );
    let top = next_mechanism(&r);
    assert_eq!(top.cause, Cause::PageableMemcpy, "{}", top.summary);
    let ev = |label: &str| {
        top.evidence
            .iter()
            .find(|e| e.label == label)
            .unwrap_or_else(|| panic!("{label}"))
            .value
    };
    // 40 copies from pageable memory blocked; 40 from pinned memory returned at once.
    assert_eq!(ev("large_copies"), 40.0);
    assert_eq!(ev("async_copies_returned_at_once"), 40.0);
    assert!(ev("median_copy_bandwidth") < 10e9);
}

#[test]
fn launch_storm_under_busy_loops_is_cpu_contention() {
    let name = "launch-storm-cpu-contention-h200.db";
    let r = report(name);
    // The script's one 0.5 s pause (launch_storm.py) is the loop's largest
    // idle part: a finding of the blocked state, with no stacks to name it.
    let first = &r.chains.chains[0];
    assert_eq!(first.cause, Cause::IdleCode, "{}", first.summary);
    assert_eq!(first.part.as_deref(), Some("off_cpu_blocked"));
    assert!(first.explained_ns >= 500_000_000, "{}", first.summary);
    let top = next_mechanism(&r);
    assert_eq!(top.cause, Cause::CpuContention, "{}", top.summary);
    let children = sql(
        name,
        "SELECT COUNT(*) FROM host_events WHERE kind = 4 AND pid = (SELECT pid FROM processes WHERE comm = 'python3' ORDER BY first_seen_ns LIMIT 1)",
    );
    assert_eq!(top.culprit_pids.len() as i64, children);
    let slow_sat = top
        .evidence
        .iter()
        .find(|e| e.label == "slow_calls_while_saturated")
        .expect("evidence")
        .value;
    assert!(slow_sat > 0.0);
    // Launch statistics count each kernel once (runtime call, not the nested driver call).
    let idle = &r.chains.gpu_idle[0];
    let runtime_launches = sql(
        name,
        "SELECT SUM(count) FROM aggregates a JOIN cuda_ops o ON o.id = a.code \
         WHERE a.source = 1 AND o.name = 'cudaLaunchKernel'",
    );
    assert_eq!(idle.launches.launches, runtime_launches);
}

/// The first finding that names a mechanism (not idle time read from the
/// thread's state or code alone).
fn next_mechanism(r: &Report) -> &ingero_tools::chains::CausalChain {
    r.chains
        .chains
        .iter()
        .find(|c| c.cause != Cause::IdleCode)
        .expect("a mechanism")
}
