//! End to end on this machine, as root: a cause of GPU idleness no rule is
//! written for, built on purpose (a stand-in training loop that starts a
//! helper process every step and waits for it, tests/standin/spawn_per_step.py
//! over the stand-in CUDA runtime), captured with real uprobes, tracepoints
//! and stacks. The top finding must say what the code shows: the thread
//! blocked in the job's own function waiting for a child, for the time the
//! workload measured and SQL finds in the file, with one process started per
//! step; no known mechanism may be put at the top instead.

mod common;

use common::{build_standins, can_trace};
use rusqlite::{params, Connection, OpenFlags};
use std::path::Path;
use std::process::Command;

#[test]
fn a_helper_process_per_step_is_named_by_its_code_not_by_a_known_mechanism() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let libs = workload.parent().expect("lib dir").to_path_buf();
    let db = dir.path().join("spawn.db");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/standin/spawn_per_step.py");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .arg("--lib")
        .arg(libs.join("libcudart.so.13"))
        .arg("--lib")
        .arg(libs.join("libcuda.so.1"))
        .args(["--", "python3"])
        .arg(&script)
        .arg(&libs)
        .arg("3")
        .output()
        .expect("run ingero trace");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "trace failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The construction, as the workload measured it.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("{\"steps\""))
        .expect("the workload's line");
    let built: serde_json::Value = serde_json::from_str(line).expect("json");
    let steps = built["steps"].as_f64().expect("steps");
    let waited_ns = built["helper_wait_s"].as_f64().expect("wait") * 1e9;
    let pid = built["pid"].as_i64().expect("pid");
    let (t0, t1) = (
        built["t0_epoch_ns"].as_i64().expect("t0"),
        built["t1_epoch_ns"].as_i64().expect("t1"),
    );

    let report = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--json", "--db"])
        .arg(&db)
        .output()
        .expect("explain");
    assert!(report.status.success());
    let v: serde_json::Value = serde_json::from_slice(&report.stdout).expect("explain json");
    let chains = v["chains"]["chains"].as_array().expect("chains");
    let top = &chains[0];
    assert_eq!(top["cause"], "idle_code", "{}", top["summary"]);
    assert_eq!(top["part"], "off_cpu_blocked", "{}", top["summary"]);
    let code = &top["code"][0];
    assert_eq!(
        code["path"]["user"]["function"], "ingero_run_helper",
        "{code}"
    );
    assert!(
        code["path"]["kernel"]
            .as_str()
            .is_some_and(|k| k.contains("wait4")),
        "{code}"
    );
    // Its time: what the workload waited for its helpers, and no more than
    // SQL finds in the GPU thread's switch-out stacks in the kernel's wait.
    let explained = top["explained_ns"].as_f64().expect("explained");
    assert!(
        // Within a quarter: a loaded machine can turn some of the wait
        // into run-queue time (preempted), which is another part.
        (explained - waited_ns).abs() < 0.25 * waited_ns,
        "explained {explained} ns, the workload waited {waited_ns} ns"
    );
    let conn = Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    let (off_ns, forks): (i64, i64) = conn
        .query_row(
            "SELECT (SELECT COALESCE(SUM(s.off_cpu_ns), 0) FROM stack_samples s \
               JOIN stacks st ON st.id = s.stack_id \
               WHERE s.kind = 2 AND s.tid = ?1 AND st.frames LIKE '%\"do_wait\"%'), \
             (SELECT COUNT(*) FROM host_events WHERE pid = ?1 AND kind = 4 \
               AND ts_ns BETWEEN ?2 AND ?3)",
            params![pid, t0, t1],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("sql");
    // The code group in the wait holds no more than SQL's off-CPU time in
    // it (the finding also holds the part's few other blocked stretches).
    let in_wait = code["idle_ns"].as_f64().expect("idle_ns");
    assert!(
        in_wait <= off_ns as f64 * 1.001,
        "{in_wait} ns given to the wait > {off_ns} ns off-CPU in do_wait"
    );
    // One process started per step of the loop, by SQL and in the per-step
    // figures.
    assert!(
        (forks as f64 - steps).abs() <= 2.0,
        "{forks} forks, {steps} steps"
    );
    let per_step = &v["chains"]["gpu_idle"][0]["per_step"]["processes_started"];
    let started = per_step.as_f64().expect("per_step");
    assert!((started - 1.0).abs() <= 0.1, "{started} processes per step");
    // No known mechanism is put above it.
    assert!(
        chains
            .iter()
            .skip(1)
            .all(|c| c["explained_share"].as_f64().unwrap_or(0.0)
                < top["explained_share"].as_f64().unwrap_or(0.0)),
        "a finding explains more than the top one"
    );
}
