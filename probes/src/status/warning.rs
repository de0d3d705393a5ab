//! What a capture could not do as asked, kept as data so the status, the
//! summary and the MCP server can list it.

use serde::Serialize;

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
