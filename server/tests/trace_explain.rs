//! End to end on this machine, as root: `ingero trace` on a workload that
//! calls the stand-in CUDA libraries while its forked workers saturate the
//! CPU, then `ingero explain` on the database it wrote.

mod common;

use common::{build_standins, explain_json};
use std::process::Command;

fn ingero() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
}

#[test]
fn explain_names_cpu_contention_in_a_real_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("trace.db");
    let out = ingero()
        .env("INGERO_STANDIN_US", "200")
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .arg("--")
        .arg(&workload)
        .args(["--iters", "1500", "--workers", "6", "--worker-ms", "4000"])
        .output()
        .expect("run ingero trace");
    assert!(
        out.status.success(),
        "trace failed (run as root): {}",
        String::from_utf8_lossy(&out.stderr)
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
