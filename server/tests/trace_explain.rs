//! End to end on this machine, as root: `ingero trace` on a workload that
//! calls the stand-in CUDA libraries while its forked workers saturate the
//! CPU, then `ingero explain` on the database it wrote.

mod common;

use common::{build_standins, explain_json, run_ok};
use std::path::Path;
use std::process::{Command, Output};

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

#[test]
fn explain_names_cpu_contention_in_a_real_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("trace.db");
    run_ok(
        ingero()
            .env("INGERO_STANDIN_US", "200")
            .args(["trace", "--quiet", "--db"])
            .arg(&db)
            .arg("--")
            .arg(&workload)
            .args(["--iters", "1500", "--workers", "6", "--worker-ms", "4000"]),
        "ingero trace (as root)",
    );
    // The workers' page faults are counted in the kernel, so nothing they
    // do pushes the traced calls out of the ring buffer.
    let conn = rusqlite::Connection::open(&db).expect("open db");
    let lost: i64 = conn
        .query_row(
            "SELECT COALESCE(SUM(lost), 0) FROM capture_losses WHERE source = 'ringbuf'",
            [],
            |r| r.get(0),
        )
        .expect("losses");
    assert_eq!(lost, 0, "records dropped in the kernel");
    drop(conn);
    let v = explain_json(&db);
    let top = &v["chains"]["chains"][0];
    let cause = top["cause"].as_str().unwrap_or_default();
    assert!(
        cause == "dataloader_worker_contention" || cause == "cpu_contention",
        "top chain is {cause}: {}\nall: {}\nidle: {}",
        top["summary"],
        v["chains"]["chains"]
            .as_array()
            .map(|a| a
                .iter()
                .map(|c| format!("{} {} {}", c["cause"], c["severity"], c["explained_ns"]))
                .collect::<Vec<_>>()
                .join("; "))
            .unwrap_or_default(),
        v["chains"]["gpu_idle"][0]["causes"]
    );
    // The culprits are the forked workers, the victim the process calling CUDA.
    let victim = top["victim_pid"].as_i64().expect("victim");
    let culprits = top["culprit_pids"].as_array().expect("culprits");
    assert!(culprits.len() >= 6, "{culprits:?}");
    assert!(culprits.iter().all(|c| c.as_i64() != Some(victim)));
    // Preemptions of the GPU thread are recorded as such.
    let steps = top["steps"].to_string();
    assert!(steps.contains("preemptions"), "{steps}");
}

/// Launch rows (with every launch timed, `--launch-sample 0`) keep every
/// launch of at least 50 us and one in 32 of the others, so the kept rows
/// over-represent slow launches; the percentiles weight them back to every
/// launch. The stand-in makes 60,000 launches of 20 us, every 100th 1 ms
/// longer: 1% slow, so the median and p95 of all launches are fast ones,
/// while among the kept rows (SQL) the slow ones are far more than 5%.
#[test]
fn launch_row_percentiles_are_of_every_launch_not_of_the_kept_rows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("rows.db");
    trace_launches_one_in_100_slow(dir.path(), &db, &["--launch-sample", "0"]);
    let conn = rusqlite::Connection::open(&db).expect("open db");
    let (kept, kept_slow): (i64, i64) = conn
        .query_row(
            "SELECT COUNT(*), SUM(dur_ns >= 1000000) FROM cuda_calls WHERE op_id = 101 AND nested = 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("kept rows");
    assert!(
        kept_slow * 20 > kept,
        "{kept_slow} slow of {kept} kept rows: more than 5%, so unweighted p95 would be slow"
    );
    drop(conn);
    let basis = fast_launch_percentiles(&db);
    assert!(basis.contains("launch rows"), "{basis}");
}

/// Sampled launch timing (the capture default) on the same construction:
/// 60,000 back-to-back launches of 20 us, every 100th 1 ms longer. Inside
/// the dense stretch most launches go untimed; each slow one is either timed
/// (a kept row of at least 1 ms) or untimed and unbounded (its thread's next
/// call came 1 ms later), never counted among the proven-fast. The
/// percentiles leave the unbounded out and stay fast ones, and the basis
/// says how many were not timed.
#[test]
fn sampled_launch_percentiles_hide_no_slow_launch_among_the_fast() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sampled.db");
    let out = trace_launches_one_in_100_slow(dir.path(), &db, &[]);
    let conn = rusqlite::Connection::open(&db).expect("open db");
    let (count, estimated, bounded): (i64, i64, i64) = conn
        .query_row(
            "SELECT SUM(count), SUM(estimated_count), SUM(estimated_bounded) FROM aggregates \
             WHERE source = 1 AND code = 101",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("aggregates");
    assert_eq!(count, 60_000, "every driver launch counted");
    // The capture's own summary says how many it did not time.
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(
        summary.contains(&format!(
            "cuLaunchKernel: {} of 60,000 not timed",
            ingero_probes::render::count(estimated.max(0) as u64)
        )),
        "{summary}"
    );
    assert!(
        estimated > count / 2,
        "{estimated} of {count} launches untimed: back-to-back launches are a dense stretch"
    );
    let slow_rows: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM cuda_calls WHERE op_id = 101 AND dur_ns >= 1000000",
            [],
            |r| r.get(0),
        )
        .expect("slow rows");
    let unbounded = estimated - bounded;
    assert!(
        slow_rows + unbounded >= 600,
        "600 slow launches made: {slow_rows} slow rows and {unbounded} untimed unbounded"
    );
    drop(conn);
    let basis = fast_launch_percentiles(&db);
    assert!(
        basis.contains("sampled launch timing") && basis.contains(&format!("{estimated} of")),
        "{basis}"
    );
}

/// Traces the stand-in's bench of 60,000 launches of 20 us, every 100th
/// 1 ms longer, each runtime launch reaching the driver, into `db` (stand-ins
/// built under `dir`; `extra`: more trace options). Returns the run's output.
fn trace_launches_one_in_100_slow(dir: &Path, db: &Path, extra: &[&str]) -> Output {
    let workload = build_standins(&dir.join("standin"));
    let lib = workload.parent().expect("stand-in dir");
    run_ok(
        ingero()
            .env("INGERO_STANDIN_US", "20")
            .env("INGERO_STANDIN_NESTED", "1")
            .env("INGERO_STANDIN_SLOW_EVERY", "100")
            .env("INGERO_STANDIN_SLOW_US", "1000")
            .args(["trace", "--quiet"])
            .args(extra)
            .arg("--lib")
            .arg(lib.join("libcudart.so.13"))
            .arg("--lib")
            .arg(lib.join("libcuda.so.1"))
            .arg("--db")
            .arg(db)
            .arg("--")
            .arg(&workload)
            .args(["--bench", "60000"]),
        "ingero trace (as root)",
    )
}

/// Checks explain's cuLaunchKernel figures on that bench: every launch
/// counted, and p50 and p95 fast launches (99% are). Returns their basis.
fn fast_launch_percentiles(db: &Path) -> String {
    let v = explain_json(db);
    let ops = v["stats"]["ops"].as_array().expect("ops");
    let launch = ops
        .iter()
        .find(|o| o["op"] == "cuLaunchKernel")
        .expect("cuLaunchKernel stats");
    assert_eq!(launch["count"], 60_000, "every launch counted");
    let basis = launch["basis"].as_str().unwrap_or_default().to_string();
    for q in ["p50_ns", "p95_ns"] {
        let p = launch[q].as_i64().expect(q);
        assert!(
            (20_000..1_000_000).contains(&p),
            "{q} {p}: 99% of the launches are 20 us ones: {basis}"
        );
    }
    basis
}
