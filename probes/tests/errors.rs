//! Capture refuses clearly when it cannot work: without privileges, without
//! tracefs, without BTF, and with bad targets or libraries. The environment
//! problems are produced for real in a re-executed copy of this test binary
//! (dropped to `nobody`, or in a private mount namespace), not mocked.

mod common;

use ingero_probes::{preflight, start, CaptureConfig, CaptureError, CheckStatus, Target};
use std::ffi::CString;
use std::process::Command;

const ROLE: &str = "INGERO_TEST_ROLE";

/// Runs `child_role` in a fresh copy of this binary with `role` set.
fn run_role(role: &str) {
    let exe = std::env::current_exe().expect("exe");
    let out = Command::new(exe)
        .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .output()
        .expect("re-exec");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "role {role} failed:\n{text}");
    assert!(text.contains("ROLE-OK"), "role {role} did not run:\n{text}");
}

fn config() -> CaptureConfig {
    CaptureConfig::new(
        Target::Command(vec!["true".into()]),
        std::env::temp_dir().join(format!("ingero-err-{}.db", std::process::id())),
    )
}

fn private_mounts() {
    // SAFETY: plain syscalls on static strings; this process is a throwaway child.
    unsafe {
        assert_eq!(libc::unshare(libc::CLONE_NEWNS), 0, "unshare");
        let root = CString::new("/").expect("cstr");
        assert_eq!(
            libc::mount(
                std::ptr::null(),
                root.as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null()
            ),
            0,
            "make / private"
        );
    }
}

/// The half that runs in the re-executed child; a no-op in a normal run.
#[test]
fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    match role.as_str() {
        "nobody" => {
            // SAFETY: dropping privileges in a throwaway child process.
            unsafe {
                assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
                assert_eq!(libc::setgid(65534), 0);
                assert_eq!(libc::setuid(65534), 0);
            }
            let err = start(config()).err().expect("capture must fail");
            assert!(matches!(err, CaptureError::NotPermitted { .. }), "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains("run as root or grant CAP_BPF+CAP_PERFMON"),
                "{msg}"
            );
            let report = preflight();
            assert!(!report.ready);
            let perm = report
                .items
                .iter()
                .find(|i| i.name == "permissions")
                .expect("permissions item");
            assert_eq!(perm.status, CheckStatus::Fail);
            assert!(perm.fix.as_deref().unwrap_or("").contains("cap_bpf"));
        }
        "no-tracefs" => {
            private_mounts();
            for dir in [
                "/sys/kernel/tracing",
                "/sys/kernel/debug/tracing",
                "/sys/kernel/debug",
            ] {
                let c = CString::new(dir).expect("cstr");
                // SAFETY: unmounting inside our private namespace; failures are fine.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
            }
            let err = start(config()).err().expect("capture must fail");
            assert!(matches!(err, CaptureError::TracefsMissing), "{err}");
            assert!(err
                .to_string()
                .contains("mount -t tracefs nodev /sys/kernel/tracing"));
            let report = preflight();
            let t = report
                .items
                .iter()
                .find(|i| i.name == "tracefs")
                .expect("item");
            assert_eq!(t.status, CheckStatus::Fail);
            assert!(!report.ready);
        }
        "no-btf" => {
            private_mounts();
            let src = CString::new("/dev/null").expect("cstr");
            let dst = CString::new("/sys/kernel/btf/vmlinux").expect("cstr");
            // SAFETY: bind mount inside our private namespace.
            let rc = unsafe {
                libc::mount(
                    src.as_ptr(),
                    dst.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                )
            };
            assert_eq!(rc, 0, "bind mount over BTF");
            let err = start(config()).err().expect("capture must fail");
            assert!(matches!(err, CaptureError::NoBtf { .. }), "{err}");
            assert!(err.to_string().contains("CONFIG_DEBUG_INFO_BTF"));
        }
        other => panic!("unknown role {other}"),
    }
    println!("ROLE-OK");
}

#[test]
fn refuses_without_privileges() {
    if common::can_trace() {
        run_role("nobody");
    }
}

#[test]
fn refuses_without_tracefs() {
    if common::can_trace() {
        run_role("no-tracefs");
    }
}

#[test]
fn refuses_without_btf() {
    if common::can_trace() {
        run_role("no-btf");
    }
}

#[test]
fn refuses_bad_targets_and_libraries() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let db = tmp.path().join("t.db");

    let err = start(CaptureConfig::new(Target::Pid(i32::MAX - 1), &db))
        .err()
        .expect("pid");
    assert!(matches!(err, CaptureError::NoSuchProcess(_)), "{err}");
    assert!(err.to_string().contains("check the pid"));

    let err = start(CaptureConfig::new(Target::Command(vec![]), &db))
        .err()
        .expect("empty");
    assert!(matches!(err, CaptureError::EmptyCommand), "{err}");

    let mut cfg = CaptureConfig::new(Target::Command(vec!["true".into()]), &db);
    let not_cuda = tmp.path().join("libcudart.so.99");
    std::fs::write(&not_cuda, b"not an elf").expect("write");
    cfg.libraries = vec![not_cuda];
    let err = start(cfg).err().expect("bad library");
    assert!(
        matches!(err, CaptureError::LibraryNotUsable { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("pass the path of a libcudart.so"));
    // The database file, prepared while the probes loaded, goes with the
    // failed start: nothing is left behind.
    assert!(!db.exists(), "a failed start left {}", db.display());
    assert!(!ingero_store::wal_file(&db).exists());

    let err = start(CaptureConfig::new(
        Target::Command(vec!["/nonexistent/train".into()]),
        &db,
    ))
    .err()
    .expect("missing program");
    assert!(matches!(err, CaptureError::Spawn { .. }), "{err}");

    assert!(!db.exists(), "a failed start left {}", db.display());

    // A file that was there before a failed start stays as it was.
    std::fs::write(&db, b"").expect("write");
    let mut cfg = CaptureConfig::new(Target::Command(vec!["true".into()]), &db);
    cfg.libraries = vec![tmp.path().join("libcudart.so.99")];
    assert!(start(cfg).is_err());
    assert_eq!(
        std::fs::metadata(&db).map(|m| m.len()).ok(),
        Some(0),
        "a file there before the start was changed or removed"
    );
    std::fs::remove_file(&db).expect("remove");

    if ingero_probes::discovery::well_known_libraries().is_empty() {
        let mut cfg = CaptureConfig::new(Target::Command(vec!["true".into()]), &db);
        cfg.require_cuda_library = true;
        let err = start(cfg).err().expect("no library");
        assert!(matches!(err, CaptureError::NoCudaLibrary { .. }), "{err}");
        assert!(err.to_string().contains("--lib"));
    }
}
