//! The code attribution of the GPU idle split, checked by SQL over the
//! stack tables of real recordings (investigations/zoo-h200, recorded on an
//! NVIDIA H200 from workloads built to a known cause).
//!
//! Off-CPU parts are exact: the idle time given to a piece of code must be
//! the off-CPU time SQL finds in the GPU thread's switch-out stacks that
//! hold that code (less the little of it the GPU was busy). On-CPU parts are
//! sampled: the time given to a function must match the samples SQL counts
//! for it, and the time the workload itself measured.

use ingero_store::TraceDb;
use ingero_tools::code::PartCode;
use ingero_tools::idle::ProcessIdle;
use ingero_tools::Scope;
use rusqlite::{params, Connection, OpenFlags};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use tempfile::TempDir;

fn unpack(case: &str) -> (TempDir, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../investigations/zoo-h200");
    let tmp = TempDir::new().expect("temp dir");
    let file = std::fs::File::open(dir.join(format!("zoo-{case}.db.xz"))).expect("recording");
    let out = tmp.path().join(format!("zoo-{case}.db"));
    let mut dst = std::fs::File::create(&out).expect("create");
    lzma_rs::xz_decompress(&mut BufReader::new(file), &mut dst).expect("xz");
    (tmp, out)
}

fn main_idle(path: &Path) -> ProcessIdle {
    let db = TraceDb::open(path).expect("open");
    let r = ingero_tools::explain::explain(&db, &Scope::ALL).expect("explain");
    r.chains.gpu_idle.into_iter().next().expect("a GPU process")
}

fn part<'a>(idle: &'a ProcessIdle, key: &str) -> &'a PartCode {
    idle.code
        .iter()
        .find(|p| p.key == key)
        .unwrap_or_else(|| panic!("no code for part {key}"))
}

fn raw(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open raw")
}

/// Off-CPU ns of the thread's switch-out stacks whose frames hold `needle`,
/// between the first and last CUDA call of the process.
fn off_cpu_with(path: &Path, tid: i32, needle: &str) -> i64 {
    raw(path)
        .query_row(
            "SELECT COALESCE(SUM(s.off_cpu_ns), 0) FROM stack_samples s JOIN stacks st \
             ON st.id = s.stack_id WHERE s.kind = 2 AND s.state = 0 AND s.tid = ?1 \
             AND st.frames LIKE ?2 AND s.off_cpu_ns > 0 \
             AND s.ts_ns >= (SELECT MIN(start_ns) FROM cuda_activity WHERE tid = ?1) \
             AND s.ts_ns <= (SELECT MAX(end_ns) FROM cuda_activity WHERE tid = ?1)",
            params![tid, format!("%{needle}%")],
            |r| r.get(0),
        )
        .expect("sql")
}

#[test]
fn every_part_is_shared_out_whole_among_its_code() {
    for case in [
        "io_bound-s50",
        "sleep_idle-s50",
        "mixed_phases-s50",
        "gil_contention-s50",
    ] {
        let (_tmp, path) = unpack(case);
        let idle = main_idle(&path);
        assert!(!idle.code.is_empty(), "{case}: stacks were recorded");
        for p in &idle.code {
            // The listed groups never hold more than the part.
            let listed: i64 = p.code.iter().map(|c| c.idle_ns).sum();
            assert!(
                listed <= p.idle_ns + 1_000,
                "{case} {}: {listed} > {}",
                p.key,
                p.idle_ns
            );
            // Each part's idle time is the split's own figure for it.
            let split = idle
                .causes
                .labelled()
                .iter()
                .find(|(l, _)| *l == p.part)
                .map(|(_, v)| *v)
                .expect("part of the split");
            assert_eq!(split, p.idle_ns, "{case} {}", p.key);
        }
    }
}

#[test]
fn blocked_time_goes_to_the_waits_the_switch_out_stacks_show() {
    // sleep_idle: time.sleep(50 ms) after each step's synchronize.
    let (_tmp, path) = unpack("sleep_idle-s50");
    let idle = main_idle(&path);
    let blocked = part(&idle, "off_cpu_blocked");
    let top = &blocked.code[0];
    assert_eq!(top.path.kernel_kind().as_deref(), Some("clock_nanosleep"));
    let user = top.path.user.as_ref().expect("the job's own frame");
    assert!(
        user.function.contains("step") && user.file.ends_with("zoo.py"),
        "{user:?}"
    );
    let sql = off_cpu_with(&path, idle.gpu_thread, "do_nanosleep");
    let got = top.idle_ns as f64;
    assert!(
        got <= sql as f64 * 1.001 && got >= 0.9 * sql as f64,
        "sleep: attributed {got} ns, SQL finds {sql} ns of off-CPU time in do_nanosleep"
    );

    // io_bound: uncached reads then a fsync each step.
    let (_tmp2, path) = unpack("io_bound-s50");
    let idle = main_idle(&path);
    let blocked = part(&idle, "off_cpu_blocked");
    let reads: i64 = blocked
        .code
        .iter()
        .filter(|c| c.path.kernel_kind().as_deref() == Some("readv"))
        .map(|c| c.idle_ns)
        .sum();
    let sql = off_cpu_with(&path, idle.gpu_thread, "__x64_sys_readv");
    assert!(
        (reads as f64) <= sql as f64 * 1.001 && (reads as f64) >= 0.85 * sql as f64,
        "reads: attributed {reads} ns, SQL finds {sql} ns in readv"
    );
}

#[test]
fn on_cpu_time_goes_to_the_function_the_samples_show() {
    // mixed_phases: 3 s of pure Python in zoo.py's host_compute between two
    // GPU-bound phases.
    let (_tmp, path) = unpack("mixed_phases-s50");
    let idle = main_idle(&path);
    let compute = part(&idle, "host_compute");
    let top = &compute.code[0];
    let user = top.path.user.as_ref().expect("the job's own frame");
    assert_eq!(user.function, "host_compute");
    assert!(
        (top.idle_ns as f64 - 3e9).abs() < 0.3e9,
        "built as 3 s, attributed {} ns",
        top.idle_ns
    );
    // The Python samples of the thread inside host_compute, counted by SQL
    // at the sampler's period, give the same time.
    let conn = raw(&path);
    let (n, hz): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COUNT(*) FROM stack_samples s JOIN stacks st ON st.id = s.stack_id \
             WHERE s.kind = 3 AND s.tid = ?1 AND st.frames LIKE '%\"function\":\"host_compute\"%'), \
             (SELECT COALESCE(MAX(hz), 99) FROM stack_sources WHERE kind = 3)",
            params![idle.gpu_thread],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("sql");
    let by_samples = n as f64 * 1e9 / hz as f64;
    assert!(
        (top.idle_ns as f64 - by_samples).abs() < 0.15 * by_samples,
        "attributed {} ns, {n} Python samples at {hz} Hz give {by_samples} ns",
        top.idle_ns
    );
}
