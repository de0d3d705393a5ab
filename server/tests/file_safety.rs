//! How ingero treats the files it writes, through the built binary: a
//! capture never writes through a symbolic link (dangling or not), never
//! adds its tables to another application's database or to another user's
//! trace, and creates its file with mode 0600; `report --out` and
//! `export --out` never write through a link and create 0600 files. Every
//! refusal is bad input (exit 2) and leaves the file in its place as it was.
//!
//! The capture tests need root and tracefs: they fail, not skip, without.

mod common;

use common::build_standins;
use ingero_store::{RawPolicy, SessionInfo, TraceWriter};
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Fails the test unless a capture can run here (root, tracefs mounted).
fn require_capture() {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let root = status
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    assert!(root, "this test runs `ingero trace`: run it as root");
    assert!(
        Path::new("/sys/kernel/tracing/events").is_dir(),
        "tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing"
    );
}

/// `ingero trace --quiet --db DB -- true`: enough to reach the database.
fn trace_true(db: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(["trace", "--quiet", "--db"])
        .arg(db)
        .args(["--", "true"])
        .output()
        .expect("run ingero trace")
}

/// `ingero trace` of the stand-in workload, a real capture of a few calls.
fn trace_workload(db: &Path, workload: &Path) -> Output {
    let dir = workload.parent().expect("workload directory");
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .env("INGERO_STANDIN_US", "0")
        .args(["trace", "--quiet", "--db"])
        .arg(db)
        .arg("--lib")
        .arg(dir.join("libcudart.so.13"))
        .arg("--lib")
        .arg(dir.join("libcuda.so.1"))
        .arg("--")
        .arg(workload)
        .args(["--iters", "3"])
        .output()
        .expect("run ingero trace")
}

fn ingero(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ingero"))
        .args(args)
        .output()
        .expect("run ingero")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A native trace with one empty session, as `ingero trace` would extend.
fn make_trace(path: &Path) {
    TraceWriter::create(path, &SessionInfo::default(), RawPolicy::All).expect("write a trace");
}

/// The bytes of `path` and of SQLite's files beside it (absent: `None`).
fn snapshot(path: &Path) -> Vec<Option<Vec<u8>>> {
    ingero_store::side_files(path)
        .iter()
        .map(|p| std::fs::read(p).ok())
        .collect()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o777
}

fn seed() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/data/ingero-investigations/pytorch-dataloader-starvation.db")
        .display()
        .to_string()
}

#[test]
fn trace_refuses_a_dangling_symlink_and_creates_nothing() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("elsewhere.db");
    let link = dir.path().join("capture.db");
    symlink(&target, &link).expect("symlink");
    let out = trace_true(&link);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("symbolic link"), "{said}");
    assert!(
        std::fs::symlink_metadata(&target).is_err(),
        "the link's target was created"
    );
    assert!(std::fs::symlink_metadata(&link)
        .expect("the link is still there")
        .file_type()
        .is_symlink());
}

#[test]
fn trace_refuses_a_symlink_to_an_existing_trace_and_leaves_it_unchanged() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let target = dir.path().join("real.db");
    make_trace(&target);
    let before = snapshot(&target);
    let link = dir.path().join("capture.db");
    symlink(&target, &link).expect("symlink");
    let out = trace_true(&link);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("symbolic link"), "{said}");
    assert_eq!(snapshot(&target), before, "the link's target changed");
}

#[test]
fn trace_refuses_a_foreign_sqlite_database_and_leaves_its_schema() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("app.db");
    let schema = |db: &Path| -> Vec<String> {
        let conn = rusqlite::Connection::open(db).expect("open app db");
        let mut stmt = conn
            .prepare("SELECT type || ' ' || name || ' ' || COALESCE(sql, '') FROM sqlite_master ORDER BY name")
            .expect("prepare");
        let rows = stmt
            .query_map([], |r| r.get::<_, String>(0))
            .expect("query")
            .collect::<rusqlite::Result<Vec<_>>>()
            .expect("rows");
        rows
    };
    {
        let conn = rusqlite::Connection::open(&db).expect("create app db");
        conn.execute_batch(
            "CREATE TABLE accounts(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
             INSERT INTO accounts(name) VALUES ('alice'), ('bob');",
        )
        .expect("app schema");
    }
    let tables = schema(&db);
    let before = snapshot(&db);
    let out = trace_true(&db);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("not an ingero trace") && said.contains("accounts"),
        "{said}"
    );
    assert_eq!(
        snapshot(&db),
        before,
        "the database or its side files changed"
    );
    assert_eq!(schema(&db), tables, "the application's schema changed");
}

#[test]
fn trace_refuses_a_trace_owned_by_another_user() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("theirs.db");
    make_trace(&db);
    std::os::unix::fs::chown(&db, Some(65534), Some(65534)).expect("chown (run as root)");
    let before = snapshot(&db);
    let out = trace_true(&db);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("owned by uid 65534") && said.contains("chown"),
        "{said}"
    );
    assert_eq!(snapshot(&db), before, "the other user's trace changed");
}

#[test]
fn a_new_capture_file_has_mode_0600_and_an_own_trace_is_extended() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let workload = build_standins(&dir.path().join("standin"));
    let db = dir.path().join("new.db");
    let out = trace_workload(&db, &workload);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(mode(&db), 0o600, "mode of the new capture file");
    for side in ingero_store::side_files(&db).iter().skip(1) {
        if side.exists() {
            assert_eq!(mode(side), 0o600, "mode of {}", side.display());
        }
    }
    // The same user's own trace is extended with a second session.
    let again = trace_workload(&db, &workload);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let conn =
        rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the capture");
    let sessions: i64 = conn
        .query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))
        .expect("count sessions");
    assert_eq!(sessions, 2);
    assert_eq!(mode(&db), 0o600, "mode after extending");
}

/// `--out` given as a link: a dangling one and one to an existing file.
fn out_links(dir: &Path) -> [(PathBuf, PathBuf); 2] {
    let dangling = (dir.join("dangling.out"), dir.join("nowhere.txt"));
    symlink(&dangling.1, &dangling.0).expect("symlink");
    let existing = (dir.join("existing.out"), dir.join("precious.txt"));
    std::fs::write(&existing.1, b"keep me").expect("write");
    symlink(&existing.1, &existing.0).expect("symlink");
    [dangling, existing]
}

fn assert_refused_through(out: &Output, target: &Path, what: &str) {
    let said = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{what}: {said}");
    assert!(said.contains("symbolic link"), "{what}: {said}");
    let now = std::fs::read(target).ok();
    assert!(
        now.is_none() || now.as_deref() == Some(b"keep me".as_slice()),
        "{what}: the link's target was written"
    );
}

#[test]
fn report_out_through_a_symlink_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (link, target) in out_links(dir.path()) {
        let out = ingero(&[
            "report",
            "--db",
            &seed(),
            "--out",
            &link.display().to_string(),
        ]);
        assert_refused_through(&out, &target, "report");
    }
}

#[test]
fn export_out_through_a_symlink_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for format in ["perfetto", "folded"] {
        let sub = dir.path().join(format);
        std::fs::create_dir(&sub).expect("mkdir");
        for (link, target) in out_links(&sub) {
            let out = ingero(&[
                "export",
                "--format",
                format,
                "--db",
                &seed(),
                "--out",
                &link.display().to_string(),
            ]);
            assert_refused_through(&out, &target, format);
        }
    }
}

#[test]
fn report_and_export_create_their_output_with_mode_0600() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("r.html");
    let json = dir.path().join("t.json");
    let runs = [
        ingero(&[
            "report",
            "--db",
            &seed(),
            "--out",
            &page.display().to_string(),
        ]),
        ingero(&[
            "export",
            "--format",
            "perfetto",
            "--db",
            &seed(),
            "--out",
            &json.display().to_string(),
        ]),
    ];
    for run in &runs {
        assert!(run.status.success(), "{}", stderr(run));
    }
    assert_eq!(mode(&page), 0o600);
    assert_eq!(mode(&json), 0o600);
    // An existing output file of the user is still replaced.
    std::fs::write(&page, b"old").expect("write");
    let again = ingero(&[
        "report",
        "--db",
        &seed(),
        "--out",
        &page.display().to_string(),
    ]);
    assert!(again.status.success(), "{}", stderr(&again));
    let text = std::fs::read_to_string(&page).expect("read");
    assert!(text.starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_new_capture_beside_a_leftover_journal_is_refused() {
    require_capture();
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("fresh.db");
    let journal = dir.path().join("fresh.db-journal");
    std::fs::write(&journal, b"an earlier database's journal").expect("write");
    let out = trace_true(&db);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("left over"), "{said}");
    assert!(
        std::fs::symlink_metadata(&db).is_err(),
        "the database was created"
    );
    assert_eq!(
        std::fs::read(&journal).expect("journal still there"),
        b"an earlier database's journal"
    );
}

#[test]
fn merge_out_through_a_dangling_symlink_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let inputs: Vec<String> = ["a.db", "b.db"]
        .iter()
        .map(|n| dir.path().join(n).display().to_string())
        .collect();
    for input in &inputs {
        let made = ingero(&["demo", "--duration", "2", "--db", input]);
        assert!(made.status.success(), "{}", stderr(&made));
    }
    let target = dir.path().join("nowhere.db");
    let link = dir.path().join("merged.db");
    symlink(&target, &link).expect("symlink");
    let out = ingero(&["merge", &link.display().to_string(), &inputs[0], &inputs[1]]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("symbolic link"), "{said}");
    assert!(
        std::fs::symlink_metadata(&target).is_err(),
        "the link's target was created"
    );
}
