//! Soak: a long capture of a busy synthetic workload, watching the capture's
//! memory and the database's growth (needs root).
//!
//! The workload is the stand-in training loop (about 15k CUDA calls/s) next
//! to a forked CPU and page-fault hog, for the whole run. The capture keeps
//! raw rows the way `ingero trace --sample 200` does (aggregates count every
//! event), which is how a long capture should run. Every 5 s it samples this
//! process's RSS (the capture runs in-process) and the database size.
//!
//! Pass criteria, checked at the end: no records lost, RSS after warm-up
//! grows by less than 16 MiB, and the database grows no faster in the second
//! half of the run than in the first (growth is linear, bounded by the
//! sampling rate, not accelerating).
//!
//! Run: `cargo bench -p ingero-probes --bench soak` (10 minutes; set
//! `INGERO_SOAK_SECS` for another length). As a test target (`cargo test
//! --all-targets`) it runs for 20 s.

mod common;

use common::standin;
use ingero_probes::{start, CaptureConfig, CaptureHandle, CaptureSummary, Target};
use ingero_store::RawPolicy;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SAMPLE_EVERY: Duration = Duration::from_secs(5);
const RSS_GROWTH_LIMIT_KIB: u64 = 16 * 1024;

fn seconds() -> u64 {
    let bench = std::env::args().any(|a| a == "--bench");
    std::env::var("INGERO_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if bench { 600 } else { 20 })
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Committed database size (pages in use, write-ahead log included), read
/// through a short-lived read-only connection: smooth, unlike file sizes,
/// which move in steps at checkpoints.
fn db_bytes(db: &Path) -> u64 {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return 0;
    };
    conn.query_row(
        "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|b| b.max(0) as u64)
    .unwrap_or(0)
}

/// File bytes on disk, log and journal included.
fn file_bytes(db: &Path) -> u64 {
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let beside = |suffix: &str| size(&PathBuf::from(format!("{}{suffix}", db.display())));
    size(db) + beside("-wal") + beside("-journal")
}

/// One look at the running capture.
struct Sample {
    at_s: f64,
    rss_kib: u64,
    db_bytes: u64,
    events: u64,
    drops: u64,
}

/// What the samples say about memory and database growth.
struct Growth {
    /// RSS after warm-up (the first 20% of the run: ring buffer mapped,
    /// caches filled), KiB.
    warm_rss_kib: u64,
    /// Highest RSS seen, KiB.
    peak_rss_kib: u64,
    /// Last RSS seen, KiB.
    end_rss_kib: u64,
    /// Database growth from warm-up to the middle of the run, bytes/s.
    first_half_rate: f64,
    /// Database growth from the middle to the end, bytes/s.
    second_half_rate: f64,
}

fn main() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("soak: skipped (needs root to load eBPF programs)");
        return;
    }
    let secs = seconds();
    let dir = standin();
    let tmp = tempfile::tempdir().expect("tempdir");
    let db = tmp.path().join("soak.db");
    let t0 = Instant::now();
    let handle = start(soak_config(&dir, &db, secs)).expect("start capture");
    let samples = watch(&handle, t0, &db);
    let summary = handle.wait().expect("capture");
    let wall = t0.elapsed().as_secs_f64();
    let growth = growth(&samples, wall);
    report(secs, wall, &summary, &growth, file_bytes(&db));
    check(&summary, &growth);
}

/// The capture of the workload: the stand-in training loop beside a CPU
/// and page-fault hog for `secs`, raw rows sampled as `--sample 200` does.
fn soak_config(dir: &Path, db: &Path, secs: u64) -> CaptureConfig {
    let argv: Vec<String> = vec![
        "env".into(),
        "INGERO_STANDIN_US=20".into(),
        "INGERO_STANDIN_SYNC_US=200".into(),
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "1000".into(),
        "--seconds".into(),
        secs.to_string(),
        "--workers".into(),
        "1".into(),
        "--worker-ms".into(),
        (secs * 1000).to_string(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), db);
    cfg.libraries = vec![dir.join("libcudart.so.13"), dir.join("libcuda.so.1")];
    cfg.duration = Some(Duration::from_secs(secs + 60));
    cfg.raw = RawPolicy::Sampled {
        per_second: 200,
        always_keep_ns: 1_000_000,
    };
    cfg
}

/// Samples RSS, database size and the capture's counters every
/// [`SAMPLE_EVERY`] until the capture ends, printing each line.
fn watch(handle: &CaptureHandle, t0: Instant, db: &Path) -> Vec<Sample> {
    let mut samples: Vec<Sample> = Vec::new();
    println!(
        "{:>7} {:>9} {:>10} {:>12} {:>7}",
        "t (s)", "RSS MiB", "DB MiB", "events", "drops"
    );
    let mut next = t0;
    while !handle.is_finished() {
        if Instant::now() >= next {
            let st = handle.status();
            let s = Sample {
                at_s: t0.elapsed().as_secs_f64(),
                rss_kib: rss_kib(),
                db_bytes: db_bytes(db),
                events: st.events,
                drops: st.drops,
            };
            println!(
                "{:>7.0} {:>9.1} {:>10.2} {:>12} {:>7}",
                s.at_s,
                s.rss_kib as f64 / 1024.0,
                s.db_bytes as f64 / 1048576.0,
                s.events,
                s.drops
            );
            samples.push(s);
            next += SAMPLE_EVERY;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    samples
}

/// Reads memory and database growth off the samples of a `wall`-second run.
fn growth(samples: &[Sample], wall: f64) -> Growth {
    let warm = samples
        .iter()
        .find(|s| s.at_s >= wall * 0.2)
        .or(samples.last())
        .expect("at least one sample");
    let peak = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let end_rss = samples.last().map(|s| s.rss_kib).unwrap_or(0);
    let mid = samples
        .iter()
        .find(|s| s.at_s >= wall * 0.5)
        .or(samples.last())
        .expect("sample");
    let first_half_rate =
        mid.db_bytes.saturating_sub(warm.db_bytes) as f64 / (mid.at_s - warm.at_s).max(1.0);
    let last = samples.last().expect("sample");
    let second_half_rate =
        last.db_bytes.saturating_sub(mid.db_bytes) as f64 / (last.at_s - mid.at_s).max(1.0);
    Growth {
        warm_rss_kib: warm.rss_kib,
        peak_rss_kib: peak,
        end_rss_kib: end_rss,
        first_half_rate,
        second_half_rate,
    }
}

/// Prints the soak's outcome: events, memory and database growth.
fn report(secs: u64, wall: f64, summary: &CaptureSummary, g: &Growth, final_db: u64) {
    let events = summary.status.events;
    println!(
        "soak: {secs} s workload, {wall:.0} s capture, {events} events ({:.0}/s), {} lost, {} written",
        events as f64 / wall,
        summary.status.drops,
        summary.status.events_written
    );
    println!(
        "soak: RSS after warm-up {:.1} MiB, peak {:.1} MiB, end {:.1} MiB (growth {:+.1} MiB, limit {} MiB)",
        g.warm_rss_kib as f64 / 1024.0,
        g.peak_rss_kib as f64 / 1024.0,
        g.end_rss_kib as f64 / 1024.0,
        (g.end_rss_kib as f64 - g.warm_rss_kib as f64) / 1024.0,
        RSS_GROWTH_LIMIT_KIB / 1024
    );
    println!(
        "soak: database {:.1} MiB at the end, {:.1} MiB/min in the first half after warm-up, {:.1} MiB/min in the second ({:.2} bytes per event)",
        final_db as f64 / 1048576.0,
        g.first_half_rate * 60.0 / 1048576.0,
        g.second_half_rate * 60.0 / 1048576.0,
        final_db as f64 / events.max(1) as f64
    );
}

/// The pass criteria: no error, no loss, bounded memory growth, database
/// growth that does not accelerate.
fn check(summary: &CaptureSummary, g: &Growth) {
    assert!(
        summary.status.error.is_none(),
        "capture failed: {:?}",
        summary.status.error
    );
    assert_eq!(summary.status.drops, 0, "records lost during the soak");
    assert!(
        g.peak_rss_kib.saturating_sub(g.warm_rss_kib) < RSS_GROWTH_LIMIT_KIB,
        "capture memory grew by {} KiB after warm-up",
        g.peak_rss_kib.saturating_sub(g.warm_rss_kib)
    );
    // Allow noise on short runs; a growing per-second cost would show as a
    // second half clearly faster than the first.
    assert!(
        g.second_half_rate <= g.first_half_rate * 1.25 + 64.0 * 1024.0,
        "database growth accelerates: {:.0} B/s then {:.0} B/s",
        g.first_half_rate,
        g.second_half_rate
    );
}
