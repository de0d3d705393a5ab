//! What call folding costs and saves, per op class, on the stand-in
//! libraries (needs root): for each class of `workload --op` (launch,
//! copy, memset, sync, event, alloc; the runtime calling the driver as the
//! real one does), ns per call untraced, with do-nothing probe pairs on the
//! functions the loop calls (the floor any capture pays), and under the
//! default capture; and the bytes the capture adds to its database per 1M
//! calls, with the default call folding and with one raw row per call
//! (`--call-rows 0`).
//!
//! Run: `cargo bench -p ingero-probes --bench fold_cost` (1M calls per
//! loop, median of 3). Under `cargo test` (no `--bench` argument) it runs
//! one short round, as a smoke test.

mod common;

use common::standin;
use ingero_probes::probe_floor::{FloorProbes, ProbeFloor};
use ingero_probes::{start, CaptureConfig, Target};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An op class: its `workload --op` name and the functions its loop calls
/// in the runtime and in the driver.
struct Class {
    name: &'static str,
    runtime: &'static [&'static str],
    driver: &'static [&'static str],
}

const CLASSES: &[Class] = &[
    Class {
        // The capture stops probing the runtime launch once launches are
        // seen to reach the driver: the floor is the driver's pair.
        name: "launch",
        runtime: &[],
        driver: &["cuLaunchKernel"],
    },
    Class {
        name: "copy",
        runtime: &["cudaMemcpyAsync"],
        driver: &[],
    },
    Class {
        name: "memset",
        runtime: &["cudaMemsetAsync"],
        driver: &[],
    },
    Class {
        name: "sync",
        runtime: &["cudaStreamSynchronize"],
        driver: &["cuStreamSynchronize"],
    },
    Class {
        name: "event",
        runtime: &["cudaEventRecord", "cudaEventQuery"],
        driver: &["cuEventRecord", "cuEventQuery"],
    },
    Class {
        name: "alloc",
        runtime: &["cudaMalloc", "cudaFree"],
        driver: &["cuMemAlloc_v2", "cuMemFree_v2"],
    },
];

/// Starts `workload --stdin --op class --bench n` (libraries loaded, waiting).
fn spawn(dir: &Path, class: &str, n: u64) -> std::process::Child {
    Command::new(dir.join("workload"))
        .args(["--stdin", "--op", class, "--bench", &n.to_string()])
        .env("INGERO_STANDIN_US", "0")
        .env("INGERO_STANDIN_NESTED", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("workload")
}

/// Releases a waiting workload and returns its ns per call.
fn finish(mut child: std::process::Child) -> f64 {
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("write");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read");
    let _ = child.wait();
    line.trim().parse().expect("ns per call")
}

/// Size of a database once vacuumed (free pages dropped, the log folded
/// in), and its raw CUDA rows.
fn compact_bytes(db: &Path) -> (u64, i64) {
    let conn = rusqlite::Connection::open(db).expect("open");
    conn.execute_batch("VACUUM").expect("vacuum");
    let q = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).expect(sql) };
    let bytes = q("PRAGMA page_count") * q("PRAGMA page_size");
    (bytes.max(0) as u64, q("SELECT COUNT(*) FROM cuda_calls"))
}

/// Captures the loop of `class` (n calls) with `call_rows`; returns its ns
/// per call, the database's size and its raw CUDA rows.
fn captured(dir: &Path, db: &Path, class: &str, n: u64, call_rows: u32) -> (f64, u64, i64) {
    let _ = std::fs::remove_file(db);
    let child = spawn(dir, class, n);
    let mut cfg = CaptureConfig::new(Target::Pid(child.id() as i32), db);
    cfg.libraries = vec![dir.join("libcudart.so.13"), dir.join("libcuda.so.1")];
    cfg.ring_bytes = 64 << 20;
    cfg.nvml = false;
    cfg.stack_hz = 0;
    cfg.call_rows = call_rows;
    let handle = start(cfg).expect("start capture (run as root)");
    let ns = finish(child);
    handle.stop().expect("stop");
    let (bytes, rows) = compact_bytes(db);
    (ns, bytes, rows)
}

/// ns per call with do-nothing probe pairs on the class's functions.
fn floor(dir: &Path, class: &Class, n: u64) -> f64 {
    let child = spawn(dir, class.name, n);
    let pid = Some(child.id());
    let mut probes = Vec::new();
    for (lib, funcs) in [
        ("libcudart.so.13", class.runtime),
        ("libcuda.so.1", class.driver),
    ] {
        if !funcs.is_empty() {
            probes.push(
                ProbeFloor::attach(&dir.join(lib), funcs, pid, FloorProbes::Pair)
                    .expect("floor probes (run as root)"),
            );
        }
    }
    let ns = finish(child);
    drop(probes);
    ns
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("fold_cost: needs root; skipped");
        return;
    }
    let dir = standin();
    let tmp = std::env::var_os("INGERO_BENCH_TMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("fold-dbs"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("tmp dir");
    let bench = std::env::args().any(|a| a == "--bench");
    let n: u64 = if bench { 1_000_000 } else { 100_000 };
    let rounds: usize = if bench { 3 } else { 1 };
    let db = tmp.join("fold.db");
    // What any capture writes: schema, catalogue, session.
    let (_, empty, _) = captured(
        &dir,
        &db,
        "copy",
        0,
        ingero_probes::config::DEFAULT_CALL_ROWS,
    );
    let per_m = |bytes: u64| bytes.saturating_sub(empty) as f64 * 1e6 / n as f64;
    println!(
        "op classes: {n} calls per loop (median of {rounds}), ns per call; bytes added to the \
         vacuumed database per 1M calls (empty capture: {empty} bytes; 4 KiB pages) and raw rows"
    );
    println!(
        "  {:<7} {:>9} {:>17} {:>28} {:>12} {:>9} {:>10} {:>12} {:>9}",
        "class",
        "untraced",
        "floor (+ns)",
        "default (+ns over floor)",
        "B/1M folded",
        "rows",
        "1 row: ns",
        "B/1M",
        "rows"
    );
    for class in CLASSES {
        let mut plain = Vec::new();
        let mut floors = Vec::new();
        let mut traced = Vec::new();
        let (mut folded, mut folded_rows) = (Vec::new(), Vec::new());
        let (mut unfolded, mut unfolded_rows) = (Vec::new(), Vec::new());
        let mut unfolded_ns = Vec::new();
        for _ in 0..rounds {
            plain.push(finish(spawn(&dir, class.name, n)));
            floors.push(floor(&dir, class, n));
            let (ns, bytes, rows) = captured(
                &dir,
                &db,
                class.name,
                n,
                ingero_probes::config::DEFAULT_CALL_ROWS,
            );
            traced.push(ns);
            folded.push(per_m(bytes));
            folded_rows.push(rows as f64);
            let (ns, bytes, rows) = captured(&dir, &db, class.name, n, 0);
            unfolded_ns.push(ns);
            unfolded.push(per_m(bytes));
            unfolded_rows.push(rows as f64);
        }
        let (p, f, t) = (median(plain), median(floors), median(traced));
        println!(
            "  {:<7} {p:>9.1} {f:>9.1} (+{:>5.1}) {t:>12.1} (+{:>6.1}, x{:.2}) {:>12.0} {:>9.0} {:>10.1} {:>12.0} {:>9.0}",
            class.name,
            f - p,
            t - f,
            t / f,
            median(folded),
            median(folded_rows),
            median(unfolded_ns),
            median(unfolded),
            median(unfolded_rows)
        );
    }
}
