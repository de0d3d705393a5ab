//! Capture cost, measured on the stand-in libraries (needs root):
//!
//! 1. added cost per probed call: `workload --bench N` times N
//!    cudaLaunchKernel calls without probes and with a capture attached, in
//!    the same run, with multi-uprobe links and with one link per function;
//!    and for both, how long the kernel takes to release the probes once
//!    the capture has stopped; and the default capture of a command that
//!    loads the runtime itself after the capture started;
//! 2. host events: ns per fresh page and per system call, traced and beside
//!    a capture of another process (`CAPTURE_COST_ONLY=host` alone);
//! 3. sustained event rate: the same loop at full speed under capture, with
//!    every event written to the database; reports events/s and losses.
//!
//! Run: `cargo bench -p ingero-probes --bench capture_cost`
//! (`CAPTURE_COST_ONLY=launch` for the launch settings alone). Under
//! `cargo test` (no `--bench` argument) it runs one short round of each, as
//! a smoke test.

mod common;

use common::standin;
use ingero_probes::probe_floor::{FloorProbes, ProbeFloor};
use ingero_probes::{start, CaptureConfig, Target};
use ingero_store::RawPolicy;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `workload --stdin --bench n` (libraries loaded, waiting).
fn spawn_bench(dir: &Path, n: u64) -> std::process::Child {
    spawn_bench_as(dir, n, false)
}

/// The same, with `nested`: each runtime launch makes a driver launch, as
/// the real runtime does (the capture then probes the driver level only).
fn spawn_bench_as(dir: &Path, n: u64, nested: bool) -> std::process::Child {
    Command::new(dir.join("workload"))
        .args(["--stdin", "--bench", &n.to_string()])
        .env("INGERO_STANDIN_US", "0")
        .env("INGERO_STANDIN_NESTED", if nested { "1" } else { "0" })
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("workload")
}

/// The launch settings on the real launch path (runtime launches reaching
/// the driver, both libraries probed): ns per launch added by each, against
/// the same loop without probes and the driver-level floors. Returns the
/// rows printed, for the ratios.
fn launch_settings(dir: &Path, tmp: &Path, n: u64, rounds: usize) {
    let base = median(
        (0..rounds)
            .map(|_| finish(spawn_bench_as(dir, n, true)))
            .collect(),
    );
    println!(
        "launch settings: {n} runtime launches, each reaching the driver (median of {rounds}), ns/launch"
    );
    println!("  without probes                          {base:>9.1}");
    let driver = dir.join("libcuda.so.1");
    for (kind, label) in [
        (FloorProbes::Pair, "do-nothing pair on cuLaunchKernel"),
        (FloorProbes::Entry, "do-nothing entry on cuLaunchKernel"),
        (FloorProbes::Session, "do-nothing session on cuLaunchKernel"),
    ] {
        let v = (0..rounds)
            .map(|_| {
                let child = spawn_bench_as(dir, n, true);
                let probes =
                    ProbeFloor::attach(&driver, &["cuLaunchKernel"], Some(child.id()), kind)
                        .expect("floor probes (run as root)");
                let ns = finish(child);
                drop(probes);
                ns
            })
            .collect();
        let m = median(v);
        println!(
            "  {label:<38} {m:>9.1}  (+{:.1}, rate ratio {:.3})",
            m - base,
            base / m
        );
    }
    let settings: [(&str, u32, u32); 4] = [
        ("capture, every launch timed, one record each", 0, 1),
        ("capture, every launch timed, launch rows 1 in 32", 0, 32),
        ("capture, default (--launch-sample 16)", 16, 32),
        ("capture, --launch-sample 64", 64, 32),
    ];
    for (label, sample, rows) in settings {
        let mut v = Vec::new();
        let mut records = 0;
        for round in 0..rounds {
            let child = spawn_bench_as(dir, n, true);
            let db = tmp.join(format!("launch{round}.db"));
            let mut cfg = CaptureConfig::new(Target::Pid(child.id() as i32), &db);
            cfg.libraries = vec![dir.join("libcudart.so.13"), driver.clone()];
            cfg.ring_bytes = 64 << 20;
            cfg.launch_sample = sample;
            cfg.launch_rows = rows;
            let handle = start(cfg).expect("start capture (run as root)");
            v.push(finish(child));
            handle.stop().expect("stop");
            records = rusqlite::Connection::open(&db)
                .and_then(|c| {
                    c.query_row("SELECT COUNT(*) FROM cuda_calls", [], |r| {
                        r.get::<_, i64>(0)
                    })
                })
                .expect("raw rows");
            let _ = std::fs::remove_file(&db);
            wait_detached();
        }
        let m = median(v);
        println!(
            "  {label:<38} {m:>9.1}  (+{:.1}, rate ratio {:.3}; {records} raw rows for {n} launches)",
            m - base,
            base / m
        );
    }
    launch_after_a_late_load(dir, tmp, n, rounds, base);
}

/// The usual capture, `ingero trace -- CMD`: the command loads the runtime
/// itself 300 ms after the capture started (as Python does when it imports
/// torch), with no library list, so the probes come when it maps the
/// libraries and the launch-level decision waits for them. Prints the same
/// row as the settings above, for the default launch settings, over `n`
/// launches; the first ones (until the probes are in place and the runtime
/// level has gone, some tens of ms) weigh little in 10 times as many.
fn launch_after_a_late_load(dir: &Path, tmp: &Path, n: u64, rounds: usize, base: f64) {
    let n = 10 * n;
    let mut v = Vec::new();
    for round in 0..rounds {
        let db = tmp.join(format!("late{round}.db"));
        let out = tmp.join(format!("late{round}.txt"));
        let script = format!(
            "INGERO_STANDIN_US=0 INGERO_STANDIN_NESTED=1 exec {} --delay-load-ms 300 --bench {n} > {}",
            dir.join("workload").display(),
            out.display()
        );
        let argv = vec!["sh".to_string(), "-c".to_string(), script];
        let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
        cfg.ring_bytes = 64 << 20;
        start(cfg)
            .expect("start capture (run as root)")
            .wait()
            .expect("capture");
        let ns: f64 = std::fs::read_to_string(&out)
            .expect("bench output")
            .trim()
            .parse()
            .expect("ns per call");
        v.push(ns);
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(&out);
        wait_detached();
    }
    let m = median(v);
    println!(
        "  {:<38} {m:>9.1}  (+{:.1}, rate ratio {:.3})",
        "capture, default, CUDA loaded late",
        m - base,
        base / m
    );
}

/// Starts `workload --stdin ARGS` (libraries loaded, waiting).
fn spawn_workload(dir: &Path, args: &[&str]) -> std::process::Child {
    Command::new(dir.join("workload"))
        .arg("--stdin")
        .args(args)
        .env("INGERO_STANDIN_US", "0")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("workload")
}

/// What the host-event probes cost: ns per fresh page (fault, allocation,
/// zeroing, unmap) and per system call (getppid), in a traced workload and
/// in an untraced one beside a capture of another process. Page
/// allocations run a program wherever they happen; system calls should
/// cost nothing extra anywhere (no syscall tracepoint is attached).
fn host_event_costs(dir: &Path, tmp: &Path, rounds: usize) {
    println!("host events (median of {rounds}): ns per page / per system call");
    for (label, args) in [
        ("fresh 4 KiB page", ["--page-bench", "100000"]),
        ("getppid() system call", ["--syscall-bench", "2000000"]),
    ] {
        let mut plain = Vec::new();
        let mut traced = Vec::new();
        let mut beside = Vec::new();
        for round in 0..rounds {
            plain.push(finish(spawn_workload(dir, &args)));
            let db = tmp.join(format!("host{round}.db"));
            let child = spawn_workload(dir, &args);
            let cfg = CaptureConfig::new(Target::Pid(child.id() as i32), &db);
            let handle = start(cfg).expect("start capture (run as root)");
            traced.push(finish(child));
            handle.stop().expect("stop");
            let _ = std::fs::remove_file(&db);
            wait_detached();
            // Beside a capture of an idle workload.
            let idle = spawn_workload(dir, &["--bench", "1"]);
            let cfg = CaptureConfig::new(Target::Pid(idle.id() as i32), &db);
            let handle = start(cfg).expect("start capture (run as root)");
            beside.push(finish(spawn_workload(dir, &args)));
            finish(idle);
            handle.stop().expect("stop");
            let _ = std::fs::remove_file(&db);
            wait_detached();
        }
        let (p, t, b) = (median(plain), median(traced), median(beside));
        println!("  {label:<24} untraced {p:>8.1}  traced {t:>8.1} (x{:.3})  beside a capture {b:>8.1} (x{:.3})", t / p, b / p);
    }
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

fn traced(
    dir: &Path,
    n: u64,
    db: &Path,
    raw: RawPolicy,
    multi_uprobes: bool,
) -> (f64, ingero_probes::CaptureSummary, Duration) {
    let child = spawn_bench(dir, n);
    let mut cfg = CaptureConfig::new(Target::Pid(child.id() as i32), db);
    cfg.raw = raw;
    cfg.multi_uprobes = multi_uprobes;
    cfg.ring_bytes = 64 << 20;
    cfg.libraries = vec![dir.join("libcudart.so.13")];
    let handle = start(cfg).expect("start capture (run as root)");
    let t0 = Instant::now();
    let ns = finish(child);
    let wall = t0.elapsed();
    let summary = handle.stop().expect("stop");
    (ns, summary, wall)
}

/// ns per call of an untraced workload B run beside workload A, both
/// released at once, with A traced or not: what a capture costs a process
/// it does not trace.
fn beside(dir: &Path, n: u64, db: &Path, trace_a: bool) -> f64 {
    let a = spawn_bench(dir, n);
    let b = spawn_bench(dir, n);
    let handle = trace_a.then(|| {
        let mut cfg = CaptureConfig::new(Target::Pid(a.id() as i32), db);
        cfg.libraries = vec![dir.join("libcudart.so.13")];
        start(cfg).expect("start capture (run as root)")
    });
    let other = std::thread::spawn(move || finish(a));
    let ns = finish(b);
    let _ = other.join();
    if let Some(h) = handle {
        let _ = h.stop();
    }
    ns
}

/// Waits until the holder processes of stopped captures have released their
/// probes (they are our only children once the workloads are reaped), and
/// says how long that took.
fn wait_detached() -> Duration {
    let me = std::process::id() as i32;
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(60) {
        let busy = ingero_probes::procs::all_pids()
            .into_iter()
            .any(|p| ingero_probes::procs::process_info(p, 0).is_some_and(|i| i.ppid == me));
        if !busy {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    t0.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("capture_cost: needs root; skipped");
        return;
    }
    let dir = standin();
    let tmp = std::env::var_os("INGERO_BENCH_TMP")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("bench-dbs"));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).expect("tmp dir");

    let bench = std::env::args().any(|a| a == "--bench");
    const N: u64 = 200_000;
    let rounds: usize = if bench { 5 } else { 1 };
    // CAPTURE_COST_ONLY=launch: only the launch settings on the real launch
    // path (section 1's last table), for quick comparisons of one change.
    if std::env::var("CAPTURE_COST_ONLY").as_deref() == Ok("launch") {
        launch_settings(&dir, &tmp, N, rounds);
        return;
    }
    // CAPTURE_COST_ONLY=host: only the host-event costs.
    if std::env::var("CAPTURE_COST_ONLY").as_deref() == Ok("host") {
        host_event_costs(&dir, &tmp, rounds);
        return;
    }
    let base = baseline(&dir, N, rounds);
    let floor = floor_costs(&dir, N, rounds, &base);
    capture_costs(&dir, &tmp, N, rounds, &base, floor);
    beside_costs(&dir, &tmp, N, rounds);
    launch_settings(&dir, &tmp, N, rounds);
    host_event_costs(&dir, &tmp, rounds);
    sustained_rates(&dir, &tmp, if bench { 3_000_000 } else { 300_000 });
}

/// Nanoseconds per call over the rounds of one setting: the median and
/// the best.
struct PerCall {
    median: f64,
    best: f64,
}

impl PerCall {
    /// The median and the best of `rounds`.
    fn of(rounds: Vec<f64>) -> PerCall {
        let best = rounds.iter().copied().fold(f64::INFINITY, f64::min);
        PerCall {
            median: median(rounds),
            best,
        }
    }
}

/// The loop without probes. Baseline rounds go first: after a capture
/// stops, its (paused) probes stay in the kernel for a while as the holder
/// process releases them.
fn baseline(dir: &Path, n: u64, rounds: usize) -> PerCall {
    let mut base = Vec::new();
    for _ in 0..rounds {
        base.push(finish(spawn_bench(dir, n)));
    }
    let base = PerCall::of(base);
    println!("per-call cost: {n} cudaLaunchKernel calls, {rounds} rounds each (median / best)");
    println!(
        "  without probes                {:>9.1} / {:>7.1} ns/call",
        base.median, base.best
    );
    base
}

/// The floors: do-nothing programs linked the same way, as a pair (what a
/// capture links) and on entry only (what a call whose return is not
/// probed would cost). Returns the pair's median, ns/call.
fn floor_costs(dir: &Path, n: u64, rounds: usize, base: &PerCall) -> f64 {
    let mut pair = 0.0;
    for (kind, label) in [
        (FloorProbes::Pair, "do-nothing probe pair "),
        (FloorProbes::Entry, "do-nothing entry probe"),
    ] {
        let mut floor = Vec::new();
        for _ in 0..rounds {
            let child = spawn_bench(dir, n);
            let probes = ProbeFloor::attach(
                &dir.join("libcudart.so.13"),
                &["cudaLaunchKernel"],
                Some(child.id()),
                kind,
            )
            .expect("floor probes (run as root)");
            floor.push(finish(child));
            drop(probes);
        }
        let floor = PerCall::of(floor);
        if kind == FloorProbes::Pair {
            pair = floor.median;
        }
        println!(
            "  {label} added {:>9.1} / {:>7.1} ns/call  (a floor: the kernel's traps, no program work)",
            floor.median - base.median,
            floor.best - base.best
        );
    }
    pair
}

/// The capture's own cost per call, with multi-uprobe links and with one
/// link per function, and how long the probes take to go after the stop.
fn capture_costs(dir: &Path, tmp: &Path, n: u64, rounds: usize, base: &PerCall, floor: f64) {
    let mut releases = Vec::new();
    for (label, multi) in [
        ("multi-uprobe links", true),
        ("one link per function", false),
    ] {
        let mut probed = Vec::new();
        let mut released = Vec::new();
        for round in 0..rounds {
            let db = tmp.join(format!("cost{round}.db"));
            let (ns, s, _) = traced(dir, n, &db, RawPolicy::All, multi);
            assert_eq!(s.status.cuda_calls, n, "every call seen");
            probed.push(ns);
            released.push(wait_detached().as_secs_f64());
        }
        let probed = PerCall::of(probed);
        println!(
            "  {label:<22} added {:>9.1} / {:>7.1} ns/call  ({:.1} ns over the floor)",
            probed.median - base.median,
            probed.best - base.best,
            probed.median - floor
        );
        releases.push((label, median(released)));
    }
    println!(
        "probes released after the stop (median of {rounds}, stand-in libcudart, 23 functions)"
    );
    for (label, secs) in &releases {
        println!("  {label:<22} {secs:>6.2} s");
    }
    if let [(_, multi), (_, classic)] = releases[..] {
        println!(
            "  ratio                  {:>6.1}x faster",
            classic / multi.max(1e-3)
        );
    }
}

/// What an untraced process pays beside a traced one (the probes live in
/// the traced process only, so nothing).
fn beside_costs(dir: &Path, tmp: &Path, n: u64, rounds: usize) {
    let mut plain = Vec::new();
    let mut next_to_traced = Vec::new();
    for round in 0..rounds {
        plain.push(beside(dir, n, &tmp.join("beside.db"), false));
        next_to_traced.push(beside(dir, n, &tmp.join(format!("beside{round}.db")), true));
        wait_detached();
    }
    let (p, t) = (median(plain), median(next_to_traced));
    println!("an untraced process beside another (median of {rounds}), ns/call");
    println!("  beside an untraced one       {p:>9.1}");
    println!(
        "  beside a traced one          {t:>9.1}  (added {:.1} ns/call; the probes live in the traced process only)",
        t - p
    );
}

/// The rate a capture holds with the loop at full speed for `m` calls,
/// keeping every raw row and sampling them.
fn sustained_rates(dir: &Path, tmp: &Path, m: u64) {
    let sampled = RawPolicy::Sampled {
        per_second: 1000,
        always_keep_ns: 1_000_000,
    };
    for (label, raw) in [
        ("every raw row", RawPolicy::All),
        ("raw rows sampled, aggregates exact", sampled),
    ] {
        let (ns, s, wall) = traced(dir, m, &tmp.join("rate.db"), raw, true);
        let _ = std::fs::remove_file(tmp.join("rate.db"));
        wait_detached();
        let loop_rate = 1e9 / ns;
        println!("sustained rate, {label}: {m} calls at full speed under capture");
        println!("  calls/s in the traced loop  {loop_rate:>12.0}");
        println!(
            "  events delivered            {:>12} ({} CUDA), committed {}, lost {}",
            s.status.events, s.status.cuda_calls, s.status.events_written, s.status.drops
        );
        println!(
            "  end to end                  {:>12.0} events/s over {:.2} s (stop included)",
            s.status.events_written as f64 / wall.as_secs_f64().max(1e-9),
            wall.as_secs_f64()
        );
        let held = s.status.drops == 0 && s.status.cuda_calls == m;
        println!(
            "  held without loss: {}",
            if held {
                format!("yes, {loop_rate:.0} events/s (target >= 500000)")
            } else {
                "no".to_string()
            }
        );
    }
}
