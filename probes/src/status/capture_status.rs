//! The point-in-time view of a capture (`CaptureHandle::status`), with
//! its per-function and per-host-event rows: what the CLI redraws and the
//! MCP server answers while a capture runs.

use super::{CaptureWarning, GpuSamplerStatus, LaunchLevelStatus, LossBreakdown, StackStatus};
use serde::Serialize;
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
    pub stacks: StackStatus,
    /// Which launch levels are probed (see [`crate::launch_level`]).
    pub launch_levels: LaunchLevelStatus,
}
