//! Every way `ingero trace` can end, as real captures of the stand-in
//! workload (root): SIGTERM, SIGINT, SIGHUP, the traced command's exit,
//! `--duration`, and a disk that fills mid-capture. After each the file is
//! readable, has a stop time and says why it ended (`sessions.stop_reason`);
//! after a signal or the duration it holds at least every CUDA call the
//! capture's last status counted. A full disk stops the capture within a
//! second or so, not when the job ends, and `explain` says why.

mod common;

use common::{build_standins, can_trace};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `--lib` arguments for the stand-in libraries next to `workload`, and
/// every launch kept as its own timed row (so rows and counted calls match).
fn trace_args(workload: &Path) -> Vec<String> {
    let dir = workload.parent().expect("workload directory");
    let mut args: Vec<String> = ["libcudart.so.13", "libcuda.so.1"]
        .iter()
        .flat_map(|l| ["--lib".to_string(), dir.join(l).display().to_string()])
        .collect();
    args.extend(["--launch-rows", "0", "--launch-sample", "0"].map(String::from));
    args
}

/// A running `ingero trace`, its output going to files: the workload it
/// leaves running inherits them, and a pipe would stay open until it ends.
struct Traced {
    child: std::process::Child,
    out: PathBuf,
    err: PathBuf,
}

impl Traced {
    /// Starts `ingero trace --quiet [--json]` of `workload_args` (after
    /// `--`) with `extra` arguments, writing `db`, its output into
    /// `logs.stdout` and `logs.stderr`; `standin_us` is the stand-in
    /// libraries' time per call.
    fn start(
        db: &Path,
        logs: &Path,
        extra: &[String],
        workload_args: &[String],
        standin_us: &str,
    ) -> Traced {
        let out = logs.with_extension("stdout");
        let err = logs.with_extension("stderr");
        let file = |p: &Path| std::fs::File::create(p).expect("output file");
        let child = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .env("INGERO_STANDIN_US", standin_us)
            .args(["trace", "--quiet", "--db"])
            .arg(db)
            .args(extra)
            .arg("--")
            .args(workload_args)
            .stdout(file(&out))
            .stderr(file(&err))
            .spawn()
            .expect("run ingero trace");
        Traced { child, out, err }
    }

    /// Waits for trace to exit; its status, stdout and stderr.
    fn wait(mut self) -> Output {
        let status = self.child.wait().expect("wait for ingero trace");
        let read = |p: &Path| std::fs::read(p).unwrap_or_default();
        Output {
            status,
            stdout: read(&self.out),
            stderr: read(&self.err),
        }
    }
}

/// `ingero trace --quiet --json` of the workload (`iters` iterations,
/// 200 us a call) with `extra` arguments, writing `db`.
fn start_trace(workload: &Path, db: &Path, extra: &[&str], iters: &str) -> Traced {
    let mut args = trace_args(workload);
    args.push("--json".into());
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = [
        workload.display().to_string(),
        "--iters".into(),
        iters.into(),
    ];
    Traced::start(db, db, &args, &run, "200")
}

/// Waits for the database to appear, then `settle` more.
fn wait_for(db: &Path, settle: Duration) {
    let t0 = Instant::now();
    while !db.exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(db.exists(), "the capture never created {}", db.display());
    std::thread::sleep(settle);
}

/// The session's stop time and reason, and the raw CUDA rows.
fn ending(db: &Path) -> (i64, String, i64) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the capture");
    conn.query_row(
        "SELECT stopped_ns, stop_reason, (SELECT COUNT(*) FROM cuda_calls) FROM sessions",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .expect("read the session")
}

/// The launched workload's pid, from the session's targets.
fn target_pid(db: &Path) -> Option<i32> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    let targets: String = conn
        .query_row("SELECT target_pids FROM sessions", [], |r| r.get(0))
        .ok()?;
    targets
        .trim_matches(['[', ']'])
        .split(',')
        .find_map(|p| p.trim().parse().ok())
}

/// Ends the workload a capture left running.
fn kill_target(pid: Option<i32>) {
    if let Some(pid) = pid {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// CUDA calls the capture's final `--json` status counted.
fn reported_calls(out: &Output) -> i64 {
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "trace --json printed no summary ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    summary["status"]["cuda_calls"]
        .as_i64()
        .expect("status.cuda_calls")
}

/// Checks a finished capture: readable, stopped, ended for `reason`, and
/// (when `counted` is given) holding every call the last status counted.
fn assert_ended(db: &Path, reason: &str, counted: Option<i64>) {
    ingero_store::TraceDb::open(db).expect("the capture opens");
    let (stopped, said, rows) = ending(db);
    assert!(stopped > 0, "{reason}: no stop time");
    assert_eq!(said, reason, "stop_reason");
    if let Some(n) = counted {
        assert!(n > 0, "{reason}: the capture counted no CUDA call");
        assert!(
            rows >= n,
            "{reason}: {rows} cuda_calls rows, the last status counted {n}"
        );
    }
}

#[test]
fn each_signal_is_recorded_as_the_ending_with_every_counted_call() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    for (signal, reason) in [("TERM", "SIGTERM"), ("INT", "SIGINT"), ("HUP", "SIGHUP")] {
        let db = dir.path().join(format!("{reason}.db"));
        let trace = start_trace(&workload, &db, &[], "15000");
        wait_for(&db, Duration::from_millis(2000));
        let sent = Command::new("kill")
            .args([format!("-{signal}"), trace.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success(), "kill -{signal}");
        let out = trace.wait();
        kill_target(target_pid(&db));
        assert!(
            out.status.success(),
            "{reason}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_ended(&db, reason, Some(reported_calls(&out)));
    }
}

#[test]
fn the_traced_commands_exit_is_recorded_with_its_status() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("exit.db");
    let out = start_trace(&workload, &db, &[], "500").wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ended(
        &db,
        "traced command exited (status 0)",
        Some(reported_calls(&out)),
    );
}

#[test]
fn the_duration_is_recorded_as_the_ending_with_every_counted_call() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("duration.db");
    let out = start_trace(&workload, &db, &["--duration", "3s"], "15000").wait();
    kill_target(target_pid(&db));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ended(&db, "duration 3 s elapsed", Some(reported_calls(&out)));
}

/// A tmpfs mounted for one test, unmounted when it ends.
struct Mount(PathBuf);

impl Mount {
    /// Mounts a tmpfs of `size` at `dir` (made first).
    fn tmpfs(dir: PathBuf, size: &str) -> Mount {
        std::fs::create_dir_all(&dir).expect("mkdir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .expect("mount (run as root)");
        assert!(mounted.success(), "mounting a {size} tmpfs failed");
        Mount(dir)
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

#[test]
fn a_full_disk_stops_the_capture_at_once_and_the_file_says_why() {
    if !can_trace() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    // 3 MiB fills during the capture's own log; 9 MiB while SQLite's log
    // grows past a partial checkpoint (where the reserve is needed).
    for size in ["3m", "9m"] {
        let small = Mount::tmpfs(dir.path().join(format!("small-{size}")), size);
        let db = small.0.join("full.db");
        let t0 = Instant::now();
        // Many fast CUDA calls for 20 s once the probes are in place.
        let run = [workload.display().to_string()]
            .into_iter()
            .chain(["--iters", "100000", "--seconds", "20", "--wait-ms", "1000"].map(String::from))
            .collect::<Vec<_>>();
        // Its output goes beside the mount, not into it.
        let logs = dir.path().join(format!("full-{size}"));
        // One raw row per call (no call folding), so the calls fill the disk.
        let rows_per_call = ["--call-rows".to_string(), "0".to_string()];
        let out = Traced::start(&db, &logs, &rows_per_call, &run, "0").wait();
        let exited_ns = now_ns();
        let took = t0.elapsed();
        let pid = target_pid(&db);
        // The job goes on, no longer traced.
        let alive = pid.is_some_and(|p| Path::new(&format!("/proc/{p}")).exists());
        kill_target(pid);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{size}: {stderr}");
        assert!(
            stderr.contains("ingero: stopping the capture: cannot write to")
                && stderr.contains("database or disk is full; the file holds everything up to +"),
            "{size}: {stderr}"
        );
        assert!(alive, "{size}: the traced job ended with the capture");
        assert!(
            took < Duration::from_secs(15),
            "{size}: the capture ran {took:?}, as long as the job"
        );
        assert_ended(&db, "writer failed: database or disk is full", None);
        let (stopped, _, rows) = ending(&db);
        assert!(rows > 0, "{size}: nothing committed before the disk filled");
        let after = Duration::from_nanos((exited_ns - stopped).max(0) as u64);
        eprintln!("{size}: trace exited {after:?} after the last instant its file holds");
        assert!(
            after < Duration::from_secs(5),
            "{size}: trace exited {after:?} after the failure"
        );
        let explained = Command::new(env!("CARGO_BIN_EXE_ingero"))
            .args(["explain", "--db"])
            .arg(&db)
            .output()
            .expect("explain");
        let text = String::from_utf8_lossy(&explained.stdout);
        assert!(explained.status.success(), "{size}: explain failed");
        assert!(
            text.contains("Session 1 stopped at +")
                && text.contains(": writer failed: database or disk is full"),
            "{size}: {text}"
        );
    }
}
