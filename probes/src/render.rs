//! Plain-text views of a capture for terminals: the live table, the final
//! summary, and the `ingero check` report.

use crate::preflight::{CheckReport, CheckStatus};
use crate::status::{CaptureStatus, CaptureSummary, StopReason};
use std::fmt::Write;

/// Human form of a duration in ns: `850ns`, `12.3us`, `4.56ms`, `1.23s`.
pub fn duration(ns: u64) -> String {
    let f = ns as f64;
    if ns < 1_000 {
        format!("{ns}ns")
    } else if ns < 1_000_000 {
        format!("{:.1}us", f / 1e3)
    } else if ns < 1_000_000_000 {
        format!("{:.2}ms", f / 1e6)
    } else {
        format!("{:.2}s", f / 1e9)
    }
}

/// Integer with thousands separators.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut rev = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().rev().enumerate() {
        if i > 0 && i % 3 == 0 {
            rev.push(',');
        }
        rev.push(c);
    }
    rev.chars().rev().collect()
}

/// The live table: header line, per-op latency rows, host event counts.
pub fn table(s: &CaptureStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "ingero trace  {:.1}s  events {}  written {}  drops {}  processes {}",
        s.elapsed_ms as f64 / 1000.0,
        count(s.events),
        count(s.events_written),
        count(s.drops),
        s.processes
    );
    let _ = writeln!(
        out,
        "{:<24} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "CUDA OP", "COUNT", "P50", "P95", "P99", "MAX", "TOTAL"
    );
    if s.ops.is_empty() {
        let _ = writeln!(out, "  (no CUDA calls yet)");
    }
    for o in &s.ops {
        let _ = writeln!(
            out,
            "{:<24} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            o.name,
            count(o.count),
            duration(o.p50_ns),
            duration(o.p95_ns),
            duration(o.p99_ns),
            duration(o.max_ns),
            duration(o.total_ns)
        );
    }
    for o in s.ops.iter().filter(|o| o.estimated > 0) {
        let _ = writeln!(
            out,
            "  {}: {} of {} not timed (sampled launch timing), each at its thread's mean \
             above; --launch-sample 0 times every launch",
            o.name,
            count(o.estimated),
            count(o.count)
        );
    }
    let _ = writeln!(out, "{:<24} {:>10} {:>9}", "HOST EVENT", "COUNT", "TOTAL");
    if s.host.is_empty() {
        let _ = writeln!(out, "  (no host events yet)");
    }
    for h in &s.host {
        let total = if h.total_ns > 0 {
            duration(h.total_ns)
        } else {
            "-".into()
        };
        let _ = writeln!(out, "{:<24} {:>10} {:>9}", h.kind, count(h.count), total);
    }
    if s.libraries.is_empty() {
        let _ = writeln!(
            out,
            "libraries: none probed yet (waiting for CUDA to be loaded)"
        );
    } else {
        let _ = writeln!(out, "libraries: {}", s.libraries.join(", "));
    }
    out
}

/// The final report printed when a capture ends.
pub fn summary(s: &CaptureSummary) -> String {
    summary_lines(s, false)
}

/// The final report for a terminal that already showed each capture warning
/// as it was raised (`ingero trace` logs them on stderr): those warnings are
/// counted, not repeated; losses, known only at the end, are listed.
pub fn summary_after_log(s: &CaptureSummary) -> String {
    summary_lines(s, true)
}

fn summary_lines(s: &CaptureSummary, warnings_logged: bool) -> String {
    let mut out = table(&s.status);
    let fallback = match s.reason {
        StopReason::Requested => "stopped on request",
        StopReason::Duration => "duration elapsed",
        StopReason::TargetExited => "traced process exited",
        StopReason::WriterFailed => "writer failed",
    };
    let why = if s.stop_text.is_empty() {
        fallback
    } else {
        s.stop_text.as_str()
    };
    let _ = write!(
        out,
        "capture ended: {why}; {} events in {} (session {})",
        count(s.status.events_written),
        s.status.db.display(),
        s.session_id
    );
    if let Some(code) = s.command_exit {
        let _ = write!(out, "; command exit status {code}");
    }
    out.push('\n');
    if let Some(line) = gpu_line(&s.status) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = stacks_line(&s.status) {
        let _ = writeln!(out, "{line}");
    }
    if let Some(line) = launch_levels_line(&s.status) {
        let _ = writeln!(out, "{line}");
    }
    if warnings_logged && !s.status.warnings.is_empty() {
        let kept = s.status.warnings.len() as u64 + s.status.warnings_omitted;
        let _ = writeln!(
            out,
            "warnings: {} raised during the capture, shown above as they happened (`--json` lists them)",
            count(kept)
        );
        for line in loss_lines(&s.status) {
            let _ = writeln!(out, "warning: {line}");
        }
    } else {
        for line in warning_lines(&s.status) {
            let _ = writeln!(out, "warning: {line}");
        }
    }
    if let Some(e) = &s.status.error {
        let _ = writeln!(out, "error: {e}");
    }
    out
}

/// What the NVML sampler read and what it cost, when it ran: GPUs, rows,
/// and the time spent in NVML calls as a share of the capture.
pub fn gpu_line(s: &CaptureStatus) -> Option<String> {
    let g = &s.gpu;
    let lib = g.library.as_ref()?;
    let span_ns = s.elapsed_ms.max(1) as f64 * 1e6;
    Some(format!(
        "gpu: {} GPU(s) sampled through {lib}: {} utilisation samples, {} process samples, \
         {} state polls; {} NVML calls took {} ({:.2}% of the capture), sampler CPU {}",
        g.devices,
        count(g.util_samples),
        count(g.process_samples),
        count(g.status_polls),
        count(g.nvml_calls),
        duration(g.nvml_time_ns),
        g.nvml_time_ns as f64 / span_ns * 100.0,
        duration(g.cpu_time_ns)
    ))
}

/// What the stack samplers took and what they cost, when they ran.
pub fn stacks_line(s: &CaptureStatus) -> Option<String> {
    let st = &s.stacks;
    if st.hz == 0 {
        return None;
    }
    let mut line = format!(
        "stacks: {} Hz on {} CPUs: {} on-CPU and {} off-CPU samples ({} frames named, {} \
         left as addresses; symboliser CPU {})",
        st.hz,
        st.cpus,
        count(st.on_cpu),
        count(st.off_cpu),
        count(st.frames_resolved),
        count(st.frames_unresolved),
        duration(st.symbolize_cpu_ns)
    );
    if st.python_processes > 0 || st.python > 0 {
        let _ = write!(
            line,
            "; {} Python samples from {} processes ({} failed reads; sampler CPU {})",
            count(st.python),
            st.python_processes,
            count(st.python_errors),
            duration(st.python_cpu_ns)
        );
    }
    Some(line)
}

/// Which launch levels were probed, once the runtime level has gone (or
/// stayed for good): how to read the runtime launch functions' counts.
pub fn launch_levels_line(s: &CaptureStatus) -> Option<String> {
    let l = &s.launch_levels;
    if l.runtime_detached > 0 {
        let when = l
            .last_detached_ms
            .map(|ms| format!(" (last at {:.2} s)", ms as f64 / 1000.0))
            .unwrap_or_default();
        return Some(format!(
            "launch levels: cudaLaunchKernel and the other runtime launch functions were probed \
             for {} launches, which reached the driver's launch (99% or more, as the kernel \
             counted); then only the driver's launch functions were probed{when}, so later runtime launches are counted under \
             cuLaunchKernel and its variants; --all-launch-levels keeps both",
            count(l.runtime_launches_probed)
        ));
    }
    l.both_kept.then(|| {
        "launch levels: both probed throughout (a runtime launch made through the driver is \
         counted at both levels, the driver's one as nested)"
            .to_string()
    })
}

/// Every warning of a capture, one sentence each: what it could not do as
/// asked (libraries not probed, fallbacks) in the order it happened, then
/// [`loss_lines`].
pub fn warning_lines(s: &CaptureStatus) -> Vec<String> {
    let mut lines: Vec<String> = s.warnings.iter().map(|w| w.message.clone()).collect();
    if s.warnings_omitted > 0 {
        lines.push(format!(
            "{} more warnings were raised and not kept",
            count(s.warnings_omitted)
        ));
    }
    lines.extend(loss_lines(s));
    lines
}

/// One sentence per cause of loss, each saying what it means and what to do.
pub fn loss_lines(s: &CaptureStatus) -> Vec<String> {
    let l = &s.losses;
    let causes: [(u64, &str); 6] = [
        (
            l.ring_full,
            "records were dropped in the kernel because the ring buffer was full; counts in the \
             database are lower bounds (raise --ring-size, ring_size in start_trace, or trace \
             fewer processes)",
        ),
        (
            l.call_table_full,
            "CUDA calls were not timed because the in-flight call table was full",
        ),
        (
            l.undecodable,
            "records could not be decoded and were skipped",
        ),
        (
            l.notices_dropped,
            "process lifecycle notices were dropped; some process rows may lack names",
        ),
        (
            l.not_written,
            "events were received but not written: the database failed (see the error below); \
             what was committed before stays readable",
        ),
        (
            s.unfinished_calls,
            "CUDA calls never returned inside the capture (their thread exited, or they were \
             still running at the stop); they are stored with ret -1 or -2 and durations up to \
             that moment (see capture_losses)",
        ),
    ];
    causes
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{} {what}", count(*n)))
        .collect()
}

/// The `ingero check` report, one line per check plus fixes.
pub fn check(r: &CheckReport) -> String {
    let mut out = String::new();
    for i in &r.items {
        let tag = match i.status {
            CheckStatus::Ok => "ok  ",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "FAIL",
        };
        let _ = writeln!(out, "[{tag}] {:<15} {}", i.name, i.detail);
        if let (Some(fix), false) = (&i.fix, i.status == CheckStatus::Ok) {
            let _ = writeln!(out, "       {:<15} fix: {fix}", "");
        }
    }
    let _ = writeln!(
        out,
        "{}",
        if r.ready {
            "capture can run on this machine"
        } else {
            "capture cannot run until the FAIL items are fixed"
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preflight::CheckItem;
    use crate::status::{CaptureState, CaptureWarning, HostStatus, OpStatus, WarningKind};

    fn status() -> CaptureStatus {
        CaptureStatus {
            state: CaptureState::Running,
            elapsed_ms: 1500,
            events: 1234,
            cuda_calls: 1000,
            host_events: 234,
            events_written: 1200,
            drops: 0,
            losses: Default::default(),
            unfinished_calls: 0,
            ops: vec![OpStatus {
                name: "cudaLaunchKernel".into(),
                count: 1000,
                p50_ns: 12_300,
                p95_ns: 45_000,
                p99_ns: 1_200_000,
                max_ns: 2_000_000_000,
                total_ns: 15_000_000,
                bytes: 0,
                errors: 0,
                estimated: 0,
            }],
            host: vec![HostStatus {
                kind: "sched_switch".into(),
                count: 234,
                total_ns: 0,
            }],
            libraries: vec!["/x/libcudart.so.13".into()],
            processes: 2,
            db: "t.db".into(),
            error: None,
            warnings: Vec::new(),
            warnings_omitted: 0,
            gpu: Default::default(),
            stacks: Default::default(),
            launch_levels: Default::default(),
        }
    }

    #[test]
    fn the_launch_levels_line_says_how_to_read_the_runtime_counts() {
        let mut s = status();
        assert_eq!(launch_levels_line(&s), None, "nothing decided yet");
        s.launch_levels.both_kept = true;
        let kept = launch_levels_line(&s).expect("kept");
        assert!(kept.contains("both probed throughout"), "{kept}");
        s.launch_levels.runtime_detached = 1;
        s.launch_levels.runtime_launches_probed = 5_985;
        s.launch_levels.last_detached_ms = Some(412);
        let gone = launch_levels_line(&s).expect("gone");
        assert!(gone.contains("for 5,985 launches"), "{gone}");
        assert!(gone.contains("(last at 0.41 s)"), "{gone}");
    }

    #[test]
    fn the_summary_reports_what_the_gpu_sampler_cost() {
        let mut s = status();
        assert_eq!(gpu_line(&s), None);
        s.gpu.library = Some("/x/libnvidia-ml.so.1".into());
        s.gpu.devices = 1;
        s.gpu.util_samples = 14;
        s.gpu.nvml_calls = 40;
        s.gpu.nvml_time_ns = 3_000_000;
        s.gpu.cpu_time_ns = 1_500;
        let line = gpu_line(&s).unwrap_or_default();
        assert!(
            line.starts_with("gpu: 1 GPU(s) sampled through /x/libnvidia-ml.so.1: 14 utilisation"),
            "{line}"
        );
        assert!(
            line.ends_with("40 NVML calls took 3.00ms (0.20% of the capture), sampler CPU 1.5us"),
            "{line}"
        );
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(duration(850), "850ns");
        assert_eq!(duration(12_300), "12.3us");
        assert_eq!(duration(4_560_000), "4.56ms");
        assert_eq!(duration(1_230_000_000), "1.23s");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(count(12), "12");
    }

    #[test]
    fn table_lists_ops_and_host_events() {
        let t = table(&status());
        assert!(t.contains("cudaLaunchKernel"));
        assert!(t.contains("12.3us") && t.contains("1.20ms") && t.contains("2.00s"));
        assert!(t.contains("sched_switch"));
        assert!(t.contains("events 1,234"));
        let s = summary(&CaptureSummary {
            status: status(),
            session_id: 1,
            started_ns: 0,
            stopped_ns: 1,
            reason: StopReason::Duration,
            stop_text: String::new(),
            stop_recorded: true,
            command_exit: Some(0),
        });
        assert!(s.contains("duration elapsed") && s.contains("command exit status 0"));
        assert!(!s.contains("warning"));
        assert!(!t.contains("not timed"), "every launch timed: no note\n{t}");
    }

    #[test]
    fn table_says_how_many_launches_were_not_timed() {
        let mut st = status();
        st.ops[0].estimated = 900;
        let t = table(&st);
        assert!(
            t.contains("cudaLaunchKernel: 900 of 1,000 not timed")
                && t.contains("--launch-sample 0"),
            "{t}"
        );
    }

    #[test]
    fn summary_names_each_cause_of_loss_with_a_fix() {
        let mut st = status();
        st.losses.ring_full = 1500;
        st.losses.not_written = 7;
        st.drops = st.losses.total();
        st.unfinished_calls = 2;
        let s = summary(&CaptureSummary {
            status: st,
            session_id: 1,
            started_ns: 0,
            stopped_ns: 1,
            reason: StopReason::TargetExited,
            stop_text: String::new(),
            stop_recorded: true,
            command_exit: None,
        });
        assert!(s.contains("1,500 records were dropped") && s.contains("--ring-size"));
        assert!(s.contains("7 events were received but not written"));
        assert!(s.contains("2 CUDA calls never returned"));
        assert_eq!(s.matches("warning:").count(), 3);
    }

    #[test]
    fn summary_lists_attach_warnings_before_losses() {
        let mut st = status();
        st.warnings = vec![
            CaptureWarning {
                kind: WarningKind::LibraryNotProbed,
                library: Some("/opt/libcudart.so.12".into()),
                message: "/opt/libcudart.so.12: not probed, so its CUDA calls are not recorded \
                          (bad ELF)"
                    .into(),
            },
            CaptureWarning {
                kind: WarningKind::PerFunctionFallback,
                library: Some("/x/libcudart.so.13".into()),
                message: "/x/libcudart.so.13: multi-uprobe links failed (EINVAL); probing it \
                          with one uprobe link per function, slower to attach and to stop"
                    .into(),
            },
        ];
        st.warnings_omitted = 3;
        st.losses.undecodable = 2;
        st.drops = st.losses.total();
        let sum = CaptureSummary {
            status: st,
            session_id: 1,
            started_ns: 0,
            stopped_ns: 1,
            reason: StopReason::Requested,
            stop_text: String::new(),
            stop_recorded: true,
            command_exit: None,
        };
        let s = summary(&sum);
        let lines: Vec<&str> = s.lines().filter(|l| l.starts_with("warning: ")).collect();
        assert_eq!(lines.len(), 4, "{s}");
        assert!(lines[0].contains("/opt/libcudart.so.12: not probed"), "{s}");
        assert!(lines[1].contains("one uprobe link per function"), "{s}");
        assert_eq!(
            lines[2],
            "warning: 3 more warnings were raised and not kept"
        );
        assert!(lines[3].contains("2 records could not be decoded"), "{s}");
        // The table itself stays free of them (they are printed once, here).
        assert!(!table(&sum.status).contains("not probed"));
        // After a log that showed them live, they are counted, not repeated;
        // the losses, known only now, are still listed.
        let after = summary_after_log(&sum);
        assert!(!after.contains("not probed"), "{after}");
        assert!(
            after.contains("warnings: 5 raised during the capture"),
            "{after}"
        );
        let loss: Vec<&str> = after
            .lines()
            .filter(|l| l.starts_with("warning: "))
            .collect();
        assert_eq!(loss.len(), 1, "{after}");
        assert!(
            loss[0].contains("2 records could not be decoded"),
            "{after}"
        );
        // The JSON form carries them typed.
        let json = serde_json::to_value(&sum).expect("json");
        let w = &json["status"]["warnings"];
        assert_eq!(w[0]["kind"], "library_not_probed");
        assert_eq!(w[0]["library"], "/opt/libcudart.so.12");
        assert_eq!(w[1]["kind"], "per_function_fallback");
        assert_eq!(json["status"]["warnings_omitted"], 3);
    }

    #[test]
    fn check_report_shows_fixes_for_problems() {
        let r = CheckReport {
            items: vec![CheckItem {
                name: "tracefs".into(),
                status: CheckStatus::Fail,
                detail: "not mounted".into(),
                fix: Some("mount -t tracefs nodev /sys/kernel/tracing".into()),
            }],
            ready: false,
        };
        let text = check(&r);
        assert!(text.contains("[FAIL] tracefs") && text.contains("fix: mount -t tracefs"));
        assert!(text.contains("cannot run"));
    }
}
