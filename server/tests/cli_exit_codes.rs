//! Exit codes follow the README contract: `ingero check` with a failing
//! item and `ingero trace` on a machine where capture cannot work exit 2 (a
//! finding about the machine, with its fix), never 1 (internal failure) or
//! 101 (panic). Where the test runs as root, it drops to an unprivileged
//! user (`setpriv`) so that the permission item fails.

use std::process::{Command, Output};

fn ingero(unprivileged: bool, args: &[&str]) -> Output {
    let bin = env!("CARGO_BIN_EXE_ingero");
    let mut cmd = if unprivileged {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args).output().expect("run ingero")
}

/// Whether this process runs as root and can drop to `nobody`.
fn can_drop_privileges() -> bool {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false);
    root && Command::new("setpriv").arg("--version").output().is_ok()
}

#[test]
fn check_exits_0_when_ready_and_2_when_an_item_fails() {
    let out = ingero(false, &["check", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("check --json");
    let ready = report["ready"].as_bool().expect("ready");
    assert_eq!(
        out.status.code(),
        Some(if ready { 0 } else { 2 }),
        "{out:?}"
    );
    if can_drop_privileges() {
        let out = ingero(true, &["check"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stdout.contains("FAIL"), "{stdout}");
        assert_eq!(out.status.code(), Some(2), "{stdout} {stderr}");
        assert!(stderr.contains("fix the FAIL items"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn trace_where_capture_cannot_work_exits_2() {
    if !can_drop_privileges() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut perms = std::fs::metadata(dir.path()).expect("meta").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o777);
    std::fs::set_permissions(dir.path(), perms).expect("chmod");
    let db = dir.path().join("t.db");
    let out = ingero(
        true,
        &["trace", "--db", &db.display().to_string(), "--", "true"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("not permitted"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn query_for_an_op_the_file_lacks_exits_2_listing_the_ops_it_has() {
    let db = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/data/ingero-investigations/pytorch-dataloader-starvation.db"
    );
    let out = ingero(false, &["query", "--db", db, "--op", "cudaNope"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        "unknown op \"cudaNope\"",
        "cudaStreamSynchronize",
        "sched_switch",
        "omit op",
    ] {
        assert!(err.contains(part), "{part} missing from: {err}");
    }
    let out = ingero(
        false,
        &["query", "--db", db, "--since", "1h", "--until", "2h"],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("94.6 s"),
        "{out:?}"
    );
}
