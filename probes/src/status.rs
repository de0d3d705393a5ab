//! Live counters shared by the capture threads, and the serialisable status
//! and summary views the CLI and the MCP server show.

use crate::histogram::Histogram;
use crate::nvml::GpuSamplerStatus;
use ingero_store::catalog::{cuda_op, HostKind};
use ingero_store::{CudaCall, HostEvent};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where a capture is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaptureState {
    /// Probes attached, events flowing.
    Running,
    /// Stop requested; draining and writing the last batch.
    Stopping,
    /// Finished; the database is complete.
    Stopped,
    /// Ended by an error (see `error`).
    Failed,
}

/// Statistics of one CUDA function.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct OpStatus {
    /// Function name.
    pub name: String,
    /// Completed calls.
    pub count: u64,
    /// Median duration, ns.
    pub p50_ns: u64,
    /// 95th percentile duration, ns.
    pub p95_ns: u64,
    /// 99th percentile duration, ns.
    pub p99_ns: u64,
    /// Longest call, ns.
    pub max_ns: u64,
    /// Time spent in the function, ns.
    pub total_ns: u64,
    /// Bytes moved or allocated.
    pub bytes: u64,
    /// Calls that returned an error code.
    pub errors: u64,
    /// Of `count`, kernel launches not timed (sampled launch timing): in
    /// the percentiles and the total each stands at its thread's mean.
    pub estimated: u64,
}

/// Count of one kind of host event.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct HostStatus {
    /// Event kind (tracepoint name).
    pub kind: String,
    /// Events seen.
    pub count: u64,
    /// Sum of durations (off-CPU time for switches), ns.
    pub total_ns: u64,
}

/// A point-in-time view of a capture.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaptureStatus {
    /// Life-cycle state.
    pub state: CaptureState,
    /// Time since the capture started, ms.
    pub elapsed_ms: u64,
    /// Events received from the kernel.
    pub events: u64,
    /// Of which CUDA calls.
    pub cuda_calls: u64,
    /// Of which host events.
    pub host_events: u64,
    /// Events committed to the database.
    pub events_written: u64,
    /// Records lost, all causes (the sum of `losses`).
    pub drops: u64,
    /// Records lost, by cause.
    pub losses: LossBreakdown,
    /// CUDA calls recorded without a return: their thread exited inside the
    /// call, or the call was still running at the stop (durations are lower
    /// bounds; `ret` is -1 or -2 in the database).
    pub unfinished_calls: u64,
    /// Per CUDA function, busiest first.
    pub ops: Vec<OpStatus>,
    /// Per host event kind.
    pub host: Vec<HostStatus>,
    /// CUDA library files probed.
    pub libraries: Vec<String>,
    /// Processes seen in events.
    pub processes: u64,
    /// Trace database being written.
    pub db: PathBuf,
    /// What went wrong, when state is `failed`.
    pub error: Option<String>,
    /// What the capture could not do as asked (libraries not probed,
    /// fallbacks), in the order it happened; losses are in `losses`.
    pub warnings: Vec<CaptureWarning>,
    /// Further warnings counted but not kept in `warnings` (it holds at most
    /// 64).
    pub warnings_omitted: u64,
    /// The NVML GPU sampler: library, GPUs, samples read and the time spent
    /// in NVML calls (its overhead).
    pub gpu: GpuSamplerStatus,
    /// The stack samplers: rate, samples resolved and their cost.
    pub stacks: crate::stacks::StackStatus,
    /// Which launch levels are probed (see [`crate::launch_level`]).
    pub launch_levels: crate::launch_level::LaunchLevelStatus,
}

/// One thing the capture could not do as asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CaptureWarning {
    /// What kind of problem.
    pub kind: WarningKind,
    /// The library concerned, when there is one.
    pub library: Option<String>,
    /// What happened and what it means, one sentence.
    pub message: String,
}

/// Kinds of capture warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A CUDA library found in a process's memory map or a well-known place
    /// could not be probed: its calls are missing from the trace.
    LibraryNotProbed,
    /// Multi-uprobe links failed on one library, probed with one uprobe link
    /// per function instead (slower to attach and to stop).
    PerFunctionFallback,
    /// The kernel has no multi-uprobe links: every library is probed with one
    /// uprobe link per function (slower to attach and to stop).
    MultiUprobeUnavailable,
    /// NVML (`libnvidia-ml.so.1`) could not be loaded or initialised: GPU
    /// activity is not measured, only inferred from the CUDA calls.
    NvmlUnavailable,
    /// On-CPU stack sampling could not start (no CPU-clock perf events):
    /// the capture goes on without on-CPU stacks.
    StackSamplingUnavailable,
    /// Sampled launch timing was asked for but the kernel has no uprobe
    /// sessions (Linux 6.13+) or the session link failed: every launch is
    /// timed, at the cost of two probe traps each.
    LaunchSamplingUnavailable,
    /// The kernel could not attach a function-exit program to
    /// `vm_mmap_pgoff`, so libraries loaded during the capture are watched
    /// through the mmap syscall tracepoints instead: while they are attached,
    /// every system call of every process on the host takes the kernel's
    /// traced path (some tens of nanoseconds more each).
    MmapWatchOnSyscallTracepoints,
    /// `INGERO_CLOCK_SKEW_NS` shifted every recorded time (a test of merged
    /// captures): the file's times are not this host's clock.
    ClockSkewInjected,
}

/// Where records went missing, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LossBreakdown {
    /// Dropped in the kernel because the ring buffer was full (raise
    /// `--ring-size` or lower the event rate).
    pub ring_full: u64,
    /// Calls not timed because the kernel's in-flight call table was full.
    pub call_table_full: u64,
    /// Records user space could not decode.
    pub undecodable: u64,
    /// Process lifecycle notices dropped because the control queue was full.
    pub notices_dropped: u64,
    /// Events received but not written because the database failed.
    pub not_written: u64,
}

impl LossBreakdown {
    /// All causes together.
    pub fn total(&self) -> u64 {
        self.ring_full
            + self.call_table_full
            + self.undecodable
            + self.notices_dropped
            + self.not_written
    }
}

/// What a finished capture produced.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaptureSummary {
    /// Final counters.
    pub status: CaptureStatus,
    /// Session id inside the database.
    pub session_id: i64,
    /// Start, epoch ns.
    pub started_ns: i64,
    /// Stop, epoch ns.
    pub stopped_ns: i64,
    /// Why the capture ended.
    pub reason: StopReason,
    /// Why, in the words recorded in the file's `sessions.stop_reason`
    /// ("SIGTERM", "duration 10 s elapsed", "writer failed: ...").
    pub stop_text: String,
    /// Whether the stop time and `stop_text` made it into the file (not
    /// when even that small update failed, on a full disk).
    pub stop_recorded: bool,
    /// Exit status of the traced command (launched captures only).
    pub command_exit: Option<i32>,
}

/// Why a capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `stop()` was called (or Ctrl-C).
    Requested,
    /// The configured duration elapsed.
    Duration,
    /// The traced command or process exited.
    TargetExited,
    /// The database could not be written: the capture stopped at the
    /// writer's first error, and `stopped_ns` is the last instant the file
    /// holds in full.
    WriterFailed,
}

#[derive(Debug, Default)]
struct OpAcc {
    hist: Histogram,
    total_ns: u64,
    bytes: u64,
    errors: u64,
    estimated: u64,
}

/// Running totals, updated by the poller once per drained batch.
#[derive(Debug, Default)]
pub struct LiveStats {
    ops: BTreeMap<u16, OpAcc>,
    host: BTreeMap<u8, (u64, u64)>,
    pub(crate) cuda: u64,
    pub(crate) hosts: u64,
    pub(crate) losses: LossBreakdown,
    pub(crate) unfinished: u64,
    pub(crate) processes: u64,
}

impl LiveStats {
    /// Counts one CUDA call.
    pub fn add_cuda(&mut self, c: &CudaCall) {
        let acc = self.ops.entry(c.op_id).or_default();
        let dur = c.dur_ns.max(0) as u64;
        acc.hist.record(dur);
        acc.total_ns += dur;
        acc.bytes += c.bytes.max(0) as u64;
        if ingero_store::catalog::unfinished::is_unfinished(c.ret) {
            self.unfinished += 1;
        } else if c.ret != 0 {
            acc.errors += 1;
        }
        self.cuda += 1;
    }

    /// Counts a run of launches counted in the kernel: the histogram gets
    /// its shortest and longest timed launch as they are and every other
    /// launch at the run's mean.
    pub fn add_run(&mut self, r: &ingero_store::LaunchRun) {
        let acc = self.ops.entry(r.op_id).or_default();
        let n = r.count.max(1) as u64;
        let mut rest = n;
        if r.timed >= 2 {
            acc.hist.record(r.timed_min_ns.max(0) as u64);
            acc.hist.record(r.timed_max_ns.max(0) as u64);
            rest -= 2;
        }
        let mean = r.mean_dur_ns().max(0) as u64;
        for _ in 0..rest {
            acc.hist.record(mean);
        }
        acc.total_ns += r.total_dur_ns().max(0) as u64;
        acc.estimated += r.untimed().max(0) as u64;
        self.cuda += n;
    }

    /// Counts one host event.
    pub fn add_host(&mut self, h: &HostEvent) {
        let e = self.host.entry(h.kind.id()).or_default();
        e.0 += 1;
        e.1 += h.dur_ns.max(0) as u64;
        self.hosts += 1;
    }

    /// Per-op view, busiest first.
    pub fn ops(&self) -> Vec<OpStatus> {
        let mut v: Vec<OpStatus> = self
            .ops
            .iter()
            .map(|(id, a)| OpStatus {
                name: cuda_op(*id)
                    .map(|o| o.name.to_string())
                    .unwrap_or_else(|| format!("op{id}")),
                count: a.hist.count(),
                p50_ns: a.hist.quantile(0.50),
                p95_ns: a.hist.quantile(0.95),
                p99_ns: a.hist.quantile(0.99),
                max_ns: a.hist.max(),
                total_ns: a.total_ns,
                bytes: a.bytes,
                errors: a.errors,
                estimated: a.estimated,
            })
            .collect();
        v.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
        v
    }

    /// Per-kind host view in kind order.
    pub fn host(&self) -> Vec<HostStatus> {
        self.host
            .iter()
            .map(|(id, (count, total))| HostStatus {
                kind: HostKind::from_id(*id as i64)
                    .map(|k| k.name().to_string())
                    .unwrap_or_else(|| format!("kind{id}")),
                count: *count,
                total_ns: *total,
            })
            .collect()
    }

    /// All losses so far.
    pub fn drops(&self) -> u64 {
        self.losses.total()
    }
}
