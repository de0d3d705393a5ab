//! Attach warnings are kept as data: a CUDA-named library in the traced
//! process that cannot be probed (a copy of the driver stand-in under a
//! runtime name, so it defines none of the runtime functions ingero traces,
//! loaded for real with LD_PRELOAD) is listed in the live status, in the
//! final summary and in its JSON form, once.

mod common;

use ingero_probes::{render, start, CaptureConfig, StopReason, Target, WarningKind};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A valid shared library named like the CUDA runtime that has none of its
/// functions: the driver stand-in copied to `dir/libcudart.so.99`.
fn unprobeable_library(dir: &Path) -> PathBuf {
    let lib = dir.join("libcudart.so.99");
    std::fs::copy(common::standin().join("libcuda.so.1"), &lib).expect("copy");
    lib
}

fn assert_one_warning_for(warnings: &[ingero_probes::CaptureWarning], lib: &Path) {
    let name = lib.display().to_string();
    let mine: Vec<_> = warnings
        .iter()
        .filter(|w| w.library.as_deref() == Some(name.as_str()))
        .collect();
    assert_eq!(mine.len(), 1, "{warnings:?}");
    assert_eq!(mine[0].kind, WarningKind::LibraryNotProbed);
    assert!(
        mine[0].message.contains("not probed") && mine[0].message.contains("defines none"),
        "{}",
        mine[0].message
    );
}

#[test]
fn a_library_found_in_a_launched_command_that_cannot_be_probed_is_a_warning() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let bad = unprobeable_library(tmp.path());
    let dir = common::standin();
    let db = tmp.path().join("t.db");
    let argv = vec![
        "env".to_string(),
        "INGERO_STANDIN_US=10".into(),
        format!("LD_PRELOAD={}", bad.display()),
        dir.join("workload").display().to_string(),
        "--iters".into(),
        "30".into(),
        "--wait-ms".into(),
        "300".into(),
    ];
    let mut cfg = CaptureConfig::new(Target::Command(argv), &db);
    cfg.libraries = common::standin_libraries();
    cfg.duration = Some(Duration::from_secs(30));
    let summary = start(cfg).expect("start").wait().expect("capture");
    assert_eq!(summary.command_exit, Some(0));
    assert!(summary.status.cuda_calls > 0, "{:?}", summary.status);
    assert_one_warning_for(&summary.status.warnings, &bad);

    let text = render::summary(&summary);
    let line = format!("warning: {}: not probed", bad.display());
    assert_eq!(text.matches(&line).count(), 1, "{text}");
    let json = serde_json::to_value(&summary).expect("json");
    let listed = json["status"]["warnings"].as_array().expect("array");
    assert!(
        listed.iter().any(|w| w["kind"] == "library_not_probed"
            && w["library"] == bad.display().to_string().as_str()),
        "{json}"
    );
}

#[test]
fn a_library_mapped_by_a_traced_pid_that_cannot_be_probed_is_in_the_live_status() {
    if !common::can_trace() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tmp");
    let bad = unprobeable_library(tmp.path());
    let dir = common::standin();
    let mut child = Command::new(dir.join("workload"))
        .args(["--stdin", "--iters", "20"])
        .env("INGERO_STANDIN_US", "10")
        .env("LD_PRELOAD", &bad)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn workload");
    let pid = child.id() as i32;
    // Wait until the stand-ins are loaded (the preload is mapped before).
    let maps = format!("/proc/{pid}/maps");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains("libcuda.so.1")) {
        assert!(
            Instant::now() < deadline,
            "the workload never loaded the stand-ins"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let db = tmp.path().join("pid.db");
    let mut cfg = CaptureConfig::new(Target::Pid(pid), &db);
    cfg.duration = Some(Duration::from_secs(30));
    let handle = start(cfg).expect("start");
    // Raised at the start, while scanning the process's maps.
    assert_one_warning_for(&handle.status().warnings, &bad);
    assert!(
        render::warning_lines(&handle.status())
            .iter()
            .any(|l| l.starts_with(&format!("{}: not probed", bad.display()))),
        "{:?}",
        handle.status()
    );
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"go\n")
        .expect("release the workload");
    let status = child.wait().expect("wait workload");
    assert!(status.success(), "{status}");
    let summary = handle.wait().expect("capture");
    assert_eq!(summary.reason, StopReason::TargetExited);
    assert!(summary.status.cuda_calls > 0, "{:?}", summary.status);
    // Not retried (and not repeated) when the control thread rescans the maps.
    assert_one_warning_for(&summary.status.warnings, &bad);
}
