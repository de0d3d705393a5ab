//! The switch that turns skipped eBPF tests into failures
//! (`INGERO_EBPF_TESTS=require`, as in CI).

mod common;

use common::decide;

#[test]
fn root_always_runs_the_ebpf_tests() {
    assert_eq!(decide(true, None), Ok(true));
    assert_eq!(decide(true, Some("require")), Ok(true));
    assert_eq!(decide(true, Some("")), Ok(true));
}

#[test]
fn without_root_the_tests_skip_unless_required() {
    assert_eq!(decide(false, None), Ok(false));
    assert_eq!(decide(false, Some("")), Ok(false));
    assert_eq!(decide(false, Some("0")), Ok(false));
}

#[test]
fn required_without_root_is_an_error_saying_what_to_do() {
    let problem = decide(false, Some("require")).expect_err("must refuse");
    assert!(problem.contains("INGERO_EBPF_TESTS=require"), "{problem}");
    assert!(problem.contains("root"), "{problem}");
    assert!(problem.contains("unset INGERO_EBPF_TESTS"), "{problem}");
}

#[test]
fn can_trace_fails_when_required_and_not_root() {
    // A real non-root run: this binary re-executed as `nobody`, with the
    // switch set, must fail in can_trace instead of skipping.
    if std::env::var_os("INGERO_SWITCH_CHILD").is_some() {
        // SAFETY: dropping privileges in a throwaway child process.
        unsafe {
            assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
            assert_eq!(libc::setgid(65534), 0);
            assert_eq!(libc::setuid(65534), 0);
        }
        common::can_trace();
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        // Not root: the check runs in this process directly.
        let required = std::env::var(common::EBPF_TESTS).is_ok_and(|v| v == "require");
        let outcome = std::panic::catch_unwind(common::can_trace);
        assert_eq!(outcome.is_err(), required);
        return;
    }
    let exe = std::env::current_exe().expect("exe");
    let run = |switch: Option<&str>| {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args([
            "--exact",
            "can_trace_fails_when_required_and_not_root",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("INGERO_SWITCH_CHILD", "1")
        .env_remove(common::EBPF_TESTS);
        if let Some(v) = switch {
            cmd.env(common::EBPF_TESTS, v);
        }
        cmd.output().expect("re-exec")
    };
    let required = run(Some("require"));
    let text = String::from_utf8_lossy(&required.stderr).into_owned()
        + &String::from_utf8_lossy(&required.stdout);
    assert!(!required.status.success(), "must fail:\n{text}");
    assert!(text.contains("INGERO_EBPF_TESTS=require is"), "{text}");
    let skipped = run(None);
    let text = String::from_utf8_lossy(&skipped.stderr);
    assert!(skipped.status.success(), "must skip:\n{text}");
    assert!(text.contains("skipping: needs root"), "{text}");
}
