//! Faults during capture, through the CLI, as root: a database on a file
//! system that fills up mid-capture keeps everything written before; a ring
//! buffer too small for the event rate and a process killed inside a CUDA call
//! are reported by `trace` and again by `explain` on the file; a ring size
//! that cannot work is refused before anything starts.

mod common;

use common::build_standins;
use std::path::Path;
use std::process::Command;

struct Mount<'a>(&'a Path);

impl Drop for Mount<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn disk_full_keeps_earlier_batches_and_reports_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let small = dir.path().join("small");
    std::fs::create_dir(&small).expect("mkdir");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=3m", "tmpfs"])
        .arg(&small)
        .status()
        .expect("mount (run as root)");
    assert!(
        mounted.success(),
        "mounting a 3 MiB tmpfs failed (run as root)"
    );
    let _unmount = Mount(&small);
    let db = small.join("full.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "0")
        // One row per call (folded calls would never fill the disk).
        .args(["trace", "--quiet", "--call-rows", "0", "--db"])
        .arg(&db)
        .arg("--")
        .arg(&workload)
        // CUDA calls alone, fast, once the probes are in place (the workload
        // waits a second after loading the libraries): several 200 ms
        // batches commit before the 3 MiB file system fills.
        .args(["--iters", "300000", "--wait-ms", "1000"])
        .output()
        .expect("run ingero trace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("disk is full"), "{stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    // What was committed before the disk filled is readable and analysable.
    let trace = ingero_store::TraceDb::open(&db).expect("readable after disk full");
    let calls: i64 = trace
        .conn()
        .query_row("SELECT COUNT(*) FROM cuda_calls", [], |r| r.get(0))
        .expect("count");
    assert!(calls > 0);
    let explained = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--db"])
        .arg(&db)
        .output()
        .expect("explain");
    assert!(explained.status.success());
}

/// `--lib` arguments for the stand-in libraries next to `workload`.
fn standin_libs(workload: &Path) -> Vec<String> {
    let dir = workload.parent().expect("workload directory");
    ["libcudart.so.13", "libcuda.so.1"]
        .iter()
        .flat_map(|l| ["--lib".to_string(), dir.join(l).display().to_string()])
        .collect()
}

/// Everything a command printed, stdout then stderr.
fn said(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn explain_text(db: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["explain", "--db"])
        .arg(db)
        .output()
        .expect("explain");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn a_small_ring_buffer_reports_its_drops_and_the_fix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("small-ring.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "0")
        .args(["trace", "--quiet", "--ring-size", "4K", "--db"])
        .arg(&db)
        .args(standin_libs(&workload))
        .arg("--")
        .arg(&workload)
        .args(["--iters", "50000"])
        .output()
        .expect("run ingero trace");
    let said = said(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("ring buffer was full") && said.contains("raise --ring-size"),
        "{said}"
    );
    let text = explain_text(&db);
    assert!(text.contains("events were lost during capture"), "{text}");
}

#[test]
fn a_process_killed_inside_a_call_is_explained_with_that_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("killed.db");
    let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "0")
        .env("INGERO_STANDIN_SYNC_US", "20000000")
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .args(standin_libs(&workload))
        .arg("--")
        .arg(&workload)
        .args(["--iters", "3", "--alarm-ms", "500"])
        .output()
        .expect("run ingero trace");
    let said = said(&out);
    assert!(said.contains("command exit status 142"), "{said}");
    assert!(said.contains("1 CUDA calls never returned"), "{said}");
    let text = explain_text(&db);
    assert!(text.contains("never returned inside the capture"), "{text}");
}

#[test]
fn an_unusable_ring_size_is_refused_before_capture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("never.db");
    for bad in ["3K", "1K", "lots", "4G"] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["trace", "--quiet", "--ring-size", bad, "--db"])
            .arg(&db)
            .args(["--", "true"])
            .output()
            .expect("run ingero trace");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {stderr}");
        assert!(stderr.contains("--ring-size"), "{bad}: {stderr}");
        assert!(!db.exists(), "{bad}: a database was created");
    }
}

#[test]
fn a_killed_capture_is_explained_as_unfinished() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("killed-capture.db");
    let mut trace = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "200")
        .args(["trace", "--quiet", "--db"])
        .arg(&db)
        .args(standin_libs(&workload))
        .arg("--")
        .arg(&workload)
        .args(["--iters", "15000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run ingero trace");
    let t0 = std::time::Instant::now();
    while !db.exists() && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(2000));
    trace.kill().expect("SIGKILL the capture");
    let _ = trace.wait();
    // The launched workload outlives the capture: end it.
    kill_targets(&db);
    let text = explain_text(&db);
    assert!(text.contains("Session 1 has no stop time"), "{text}");
    assert!(text.contains("cudaLaunchKernel"), "{text}");
}

/// Ends the processes a capture launched (its session's target pids): the
/// workload outlives a capture that did not end it.
fn kill_targets(db: &Path) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open");
    let targets: String = conn
        .query_row("SELECT target_pids FROM sessions", [], |r| r.get(0))
        .expect("session row");
    drop(conn);
    for pid in targets
        .trim_matches(['[', ']'])
        .split(',')
        .filter_map(|p| p.trim().parse::<i32>().ok())
    {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// `ingero trace` of the stand-in workload, ended after two seconds by
/// `signal` (sent with kill(1)); returns the database and the exit status.
fn trace_ended_by(signal: &str, dir: &Path) -> (std::path::PathBuf, std::process::ExitStatus) {
    let workload = build_standins(&dir.join("standin"));
    let db = dir.join(format!("ended-by-{signal}.db"));
    let mut trace = Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "200")
        .args(["trace", "--quiet", "--json", "--db"])
        .arg(&db)
        .args(standin_libs(&workload))
        .arg("--")
        .arg(&workload)
        .args(["--iters", "15000"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run ingero trace");
    let t0 = std::time::Instant::now();
    while !db.exists() && t0.elapsed() < std::time::Duration::from_secs(20) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(2000));
    let sent = Command::new("kill")
        .args([format!("-{signal}"), trace.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success(), "kill -{signal}");
    let status = trace.wait().expect("wait");
    kill_targets(&db);
    (db, status)
}

#[test]
fn sigterm_and_sighup_finalise_the_capture_like_ctrl_c() {
    for signal in ["TERM", "HUP", "INT"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (db, status) = trace_ended_by(signal, dir.path());
        assert!(status.success(), "{signal}: ingero trace exited {status:?}");
        // Finalised: a stop time, the WAL checkpointed into the file, and
        // the CUDA calls of the capture in it.
        common::assert_finalised(&db, signal);
        let text = explain_text(&db);
        assert!(!text.contains("has no stop time"), "{signal}: {text}");
    }
}

#[test]
fn a_trace_with_nothing_to_trace_is_bad_input() {
    for args in [
        vec!["trace"],
        vec!["trace", "--cmd", "   "],
        vec!["trace", "--cmd", "python 'oops"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(&args)
            .output()
            .expect("run ingero trace");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("ingero: "), "{args:?}: {stderr}");
    }
}
