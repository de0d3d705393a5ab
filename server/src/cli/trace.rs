//! `ingero trace`: record CUDA calls and host events of a process, a command
//! or the whole machine into a trace database, with a live table on stderr.
//!
//! Warnings of the capture engine (a CUDA library it could not probe, a
//! fallback to one uprobe link per function) are logged on stderr as they
//! happen (filter `INGERO_LOG`, default `ingero=warn`), above the live table
//! while it runs, and listed again as `warning:` lines in the final summary
//! (in `status.warnings` with `--json`).

mod live_log;
mod signals;

use crate::exit::BadArgument;
use anyhow::Context;
use ingero_probes::config::parse_ring_size;
use ingero_probes::{render, start, CaptureConfig, CaptureSummary, StopReason, Target};
use ingero_store::RawPolicy;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Record a trace.
#[derive(clap::Args)]
pub struct Args {
    /// Trace this running process and every process it forks from now on.
    #[arg(long, conflicts_with_all = ["cmd", "all", "command"])]
    pid: Option<i32>,
    /// Run this command under the trace, e.g. --cmd "python train.py --epochs 1".
    #[arg(long, conflicts_with_all = ["all", "command"])]
    cmd: Option<String>,
    /// Trace every process on the machine.
    #[arg(long, conflicts_with = "command")]
    all: bool,
    /// Stop after this long (30s, 5m, 1h); default: until Ctrl-C or the target exits.
    #[arg(long)]
    duration: Option<String>,
    /// Trace database to write (created, or extended with a new session).
    #[arg(long, default_value = "ingero.db")]
    db: PathBuf,
    /// Extra CUDA library to probe (repeatable), for libraries outside the usual places.
    #[arg(long = "lib", value_name = "PATH")]
    libs: Vec<PathBuf>,
    /// Fail at start when no CUDA library is found.
    #[arg(long)]
    require_cuda: bool,
    /// Keep at most N raw rows per second, process and op (slow calls always kept);
    /// aggregates still count every event.
    #[arg(long, value_name = "N")]
    sample: Option<u32>,
    /// Kernel ring buffer size: a power of two of at least 4K (4K, 256K, 16M,
    /// 1G). Raise it when the summary reports records dropped in the kernel.
    #[arg(long, value_name = "BYTES", default_value = "16M", value_parser = parse_ring_size)]
    ring_size: u32,
    /// Probe each CUDA function with its own uprobe link instead of one
    /// multi-uprobe link per library (kernels before 6.6 use this path on
    /// their own). Slower to attach and to detach.
    #[arg(long)]
    per_function_uprobes: bool,
    /// Keep probing both launch levels (the runtime's cudaLaunchKernel and
    /// the driver's cuLaunchKernel it calls) for the whole capture. By
    /// default the runtime level goes once every runtime launch is seen to
    /// reach the driver's: each launch then costs one probe instead of two.
    #[arg(long)]
    all_launch_levels: bool,
    /// Record no NVML GPU samples (utilisation, memory, PCIe, clocks), even
    /// where the NVIDIA driver is present: the GPU busy share is then only a
    /// host-side bound. For measuring the sampler's own cost.
    #[arg(long)]
    no_gpu_samples: bool,
    /// Stack samples per second of the traced tree (on-CPU, per CPU, from a
    /// CPU-clock perf event), with the stack of each CUDA-calling thread at
    /// every switch-out and Python frames of traced CPython processes at
    /// the same rate. 0 = no stacks.
    #[arg(long, value_name = "HZ", default_value_t = ingero_probes::stacks::DEFAULT_STACK_HZ,
          value_parser = clap::value_parser!(u32).range(0..=10_000))]
    stack_hz: u32,
    /// With --stack-hz: no Python frames (native and kernel stacks only).
    #[arg(long)]
    no_python_stacks: bool,
    /// With --stack-hz: no stack at each switch-out of a CUDA-calling
    /// thread (where it blocked); on-CPU and Python samples stay.
    #[arg(long)]
    no_offcpu_stacks: bool,
    /// Sampled launch timing: inside a thread's dense stretches (a driver
    /// launch entered under 50 us after its previous one), time one launch
    /// in N and count the others at entry with the thread's recent mean
    /// launch time (aggregates.estimated_count, no raw row; their return
    /// codes are not seen), each bounded by the thread's next probed call
    /// (estimated_bounded / estimated_bound_ns; unbounded ones stay out of
    /// percentiles). Launches outside dense stretches are all timed. An
    /// untimed launch costs one probe trap instead of two. Every launch is
    /// still counted. Needs Linux 6.13+ (uprobe sessions; older kernels
    /// time every launch). 0 or 1 = time every launch (launch rows then
    /// fold the short ones, exact).
    #[arg(long, value_name = "N", default_value_t = ingero_probes::config::DEFAULT_LAUNCH_SAMPLE,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    launch_sample: u32,
    /// Launch rows, with every launch timed: keep one outer kernel launch
    /// in N per thread as a raw row (plus the first, every failed one and
    /// every one of at least 50 us); the others are summed in the kernel
    /// with their measured durations, so counts, totals and activity stay
    /// exact while the ring buffer carries a fraction of the records.
    /// 0 or 1 = one raw row per launch.
    #[arg(long, value_name = "N", default_value_t = ingero_probes::config::DEFAULT_LAUNCH_ROWS,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    launch_rows: u32,
    /// Call folding, so the file grows with time and not with the call
    /// rate: per thread and op, keep at most N raw rows per second of the
    /// calls (copies, memsets, synchronisations, events, allocations, ...)
    /// that succeed in under 50 us, and hold the launch rows to the same
    /// budget; every failed or slower call keeps its row; the others are
    /// counted in the kernel (count, time, bytes and extremes exact in
    /// aggregates and activity spans, no raw row). At the default the fast
    /// calls of a thread add at most 128 KiB per second to the database
    /// whatever their rate (about 20 KB measured at 1M calls/s; README,
    /// "Capture size"). 0 = one raw row per call.
    #[arg(long, value_name = "N", default_value_t = ingero_probes::config::DEFAULT_CALL_ROWS,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    call_rows: u32,
    /// No live table, even on a terminal.
    #[arg(long)]
    quiet: bool,
    /// Print the final summary as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Command to run, after `--` (alternative to --cmd).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Splits a command line on whitespace, honouring '…', "…" and backslash escapes
/// (no variable or glob expansion).
fn split_command(line: &str) -> anyhow::Result<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(BadArgument("unterminated ' in --cmd".into()).into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x) => cur.push(x),
                            None => {
                                return Err(BadArgument("unterminated \" in --cmd".into()).into())
                            }
                        },
                        Some(x) => cur.push(x),
                        None => return Err(BadArgument("unterminated \" in --cmd".into()).into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(x) = chars.next() {
                    cur.push(x);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

fn target(args: &Args) -> anyhow::Result<Target> {
    if let Some(pid) = args.pid {
        return Ok(Target::Pid(pid));
    }
    if let Some(cmd) = &args.cmd {
        let argv = split_command(cmd)?;
        if argv.is_empty() {
            return Err(BadArgument("--cmd is empty: give the program to run".into()).into());
        }
        return Ok(Target::Command(argv));
    }
    if !args.command.is_empty() {
        return Ok(Target::Command(args.command.clone()));
    }
    if args.all {
        return Ok(Target::AllProcesses);
    }
    Err(BadArgument(
        "say what to trace: --pid PID, --cmd \"COMMAND\", -- COMMAND..., or --all".into(),
    )
    .into())
}

/// Runs the capture until it ends, showing the live table, then prints the summary.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut config = CaptureConfig::new(target(&args)?, args.db.clone());
    if let Some(d) = &args.duration {
        let ns = ingero_store::parse_duration_ns(d)?;
        config.duration = Some(Duration::from_nanos(ns.max(0) as u64));
    }
    config.libraries = args.libs.clone();
    config.require_cuda_library = args.require_cuda;
    config.ring_bytes = args.ring_size;
    config.multi_uprobes = !args.per_function_uprobes;
    config.one_launch_level = !args.all_launch_levels;
    config.nvml = !args.no_gpu_samples;
    config.stack_hz = args.stack_hz;
    config.python_stacks = !args.no_python_stacks;
    config.offcpu_stacks = !args.no_offcpu_stacks;
    config.launch_sample = args.launch_sample;
    config.launch_rows = args.launch_rows;
    config.call_rows = args.call_rows;
    if let Some(n) = args.sample {
        config.raw = RawPolicy::Sampled {
            per_second: n,
            always_keep_ns: 1_000_000,
        };
    }
    let live = !args.quiet && std::io::stderr().is_terminal();
    // Dropped on every way out, writing any log line still held.
    let logs = live_log::init(live);
    let handle = start(config)?;
    let stopper = handle.stopper();
    // SIGINT, SIGTERM and SIGHUP (Ctrl-C, `timeout`, `docker stop`, systemd,
    // a closed terminal) all end the capture the same way: probes detached,
    // last batch written, stop time and the signal's name recorded, summary
    // printed. A second signal aborts at once.
    signals::install(move |name| stopper.request_stop(name))
        .context("installing the signal handlers")?;

    let mut drawn_lines = 0usize;
    let mut next_draw = Instant::now();
    while !handle.is_finished() {
        if live && Instant::now() >= next_draw {
            let frame = render::table(&handle.status());
            let log_lines = logs.sink().take();
            let mut err = std::io::stderr().lock();
            if drawn_lines > 0 {
                // Move up over the previous frame and clear it.
                let _ = write!(err, "\x1b[{drawn_lines}A\x1b[J");
            }
            // New log lines where the old frame was, the new frame below.
            let _ = err.write_all(&log_lines);
            let _ = err.write_all(frame.as_bytes());
            let _ = err.flush();
            drawn_lines = frame.lines().count();
            next_draw = Instant::now() + Duration::from_secs(1);
        }
        // Wakes at once when the capture ends: the stop is not rounded up
        // to a polling step.
        handle.wait_timeout(Duration::from_millis(100));
    }
    let summary = handle.wait()?;
    if live && drawn_lines > 0 {
        let _ = write!(std::io::stderr(), "\x1b[{drawn_lines}A\x1b[J");
    }
    drop(logs);
    if summary.reason == StopReason::WriterFailed {
        eprintln!("{}", writer_failed_line(&summary));
    }
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&summary)?)
    } else {
        // The capture's warnings went to stderr as they were raised.
        render::summary_after_log(&summary)
    };
    // stdout may sit on the very disk that filled: say so, never panic.
    let printed = std::io::stdout()
        .lock()
        .write_all(text.as_bytes())
        .and_then(|()| std::io::stdout().lock().flush());
    if let Err(e) = printed {
        eprintln!("ingero: cannot print the capture summary: {e}");
    }
    if let Some(e) = &summary.status.error {
        anyhow::bail!("the trace database is incomplete: {e}");
    }
    Ok(())
}

/// What `trace` says when the database could not be written and the
/// capture stopped for it: which file, why, and how far the file is whole.
fn writer_failed_line(s: &CaptureSummary) -> String {
    let error = s
        .stop_text
        .strip_prefix("writer failed: ")
        .unwrap_or(&s.stop_text);
    let held = (s.stopped_ns - s.started_ns).max(0) as f64 / 1e9;
    let mut line = format!(
        "ingero: stopping the capture: cannot write to {}: {error}; the file holds everything up to +{held:.1} s",
        s.status.db.display()
    );
    if !s.stop_recorded {
        line.push_str(" (its stop time and reason could not be recorded)");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_a_shell_without_expansion() {
        assert_eq!(
            split_command(r#"python "train one.py" --lr 0.1 'a b' c\ d $HOME"#).unwrap(),
            vec![
                "python",
                "train one.py",
                "--lr",
                "0.1",
                "a b",
                "c d",
                "$HOME"
            ]
        );
        assert!(split_command("python 'oops").is_err());
        assert!(split_command("   ").unwrap().is_empty());
    }
}
