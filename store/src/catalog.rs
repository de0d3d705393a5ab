//! The fixed catalogue of traced CUDA functions and host event kinds.
//!
//! Ids are part of the on-disk format: never renumber, only append.

use serde::{Deserialize, Serialize};

/// Which CUDA library a function belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CudaApi {
    /// `libcudart.so` (runtime API, what PyTorch calls).
    Runtime,
    /// `libcuda.so` (driver API, what cuBLAS/cuDNN and the runtime call).
    Driver,
}

/// What a CUDA function does, for grouping in analyses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// Enqueues a kernel.
    Launch,
    /// Moves bytes between host and device.
    Copy,
    /// Blocks the host until GPU work finishes.
    Sync,
    /// Allocates device or pinned host memory.
    Alloc,
    /// Releases memory.
    Free,
    /// Anything else.
    Other,
}

impl OpClass {
    /// Stable text form stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            OpClass::Launch => "launch",
            OpClass::Copy => "copy",
            OpClass::Sync => "sync",
            OpClass::Alloc => "alloc",
            OpClass::Free => "free",
            OpClass::Other => "other",
        }
    }

    /// Parses the stored text form; unknown text maps to `Other`.
    pub fn parse(s: &str) -> OpClass {
        match s {
            "launch" => OpClass::Launch,
            "copy" => OpClass::Copy,
            "sync" => OpClass::Sync,
            "alloc" => OpClass::Alloc,
            "free" => OpClass::Free,
            _ => OpClass::Other,
        }
    }
}

/// One traced CUDA function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaOpSpec {
    /// Stable id stored in `cuda_calls.op_id`.
    pub id: u16,
    /// Exported symbol name.
    pub name: &'static str,
    /// Library the symbol lives in.
    pub api: CudaApi,
    /// Behavioural class.
    pub class: OpClass,
}

const fn op(id: u16, name: &'static str, api: CudaApi, class: OpClass) -> CudaOpSpec {
    CudaOpSpec {
        id,
        name,
        api,
        class,
    }
}

use CudaApi::{Driver, Runtime};
use OpClass::{Alloc, Free, Launch, Other, Sync};
const COPY: OpClass = OpClass::Copy;

/// Every CUDA function ingero knows by name.
pub const CUDA_OPS: &[CudaOpSpec] = &[
    op(1, "cudaMalloc", Runtime, Alloc),
    op(2, "cudaFree", Runtime, Free),
    op(3, "cudaLaunchKernel", Runtime, Launch),
    op(4, "cudaMemcpy", Runtime, COPY),
    op(5, "cudaStreamSynchronize", Runtime, Sync),
    op(6, "cudaDeviceSynchronize", Runtime, Sync),
    op(7, "cudaMemcpyAsync", Runtime, COPY),
    op(8, "cudaMallocHost", Runtime, Alloc),
    op(9, "cudaHostAlloc", Runtime, Alloc),
    op(10, "cudaEventSynchronize", Runtime, Sync),
    op(11, "cudaMallocManaged", Runtime, Alloc),
    op(12, "cudaFreeHost", Runtime, Free),
    op(13, "cudaMemsetAsync", Runtime, Other),
    op(14, "cudaMemset", Runtime, Other),
    op(101, "cuLaunchKernel", Driver, Launch),
    op(102, "cuMemAlloc_v2", Driver, Alloc),
    op(103, "cuMemFree_v2", Driver, Free),
    op(104, "cuMemcpyHtoDAsync_v2", Driver, COPY),
    op(105, "cuMemcpyDtoHAsync_v2", Driver, COPY),
    op(106, "cuStreamSynchronize", Driver, Sync),
    op(107, "cuCtxSynchronize", Driver, Sync),
    op(108, "cuMemcpy", Driver, COPY),
    op(109, "cuMemcpyAsync", Driver, COPY),
    op(110, "cuMemAllocManaged", Driver, Alloc),
    op(111, "cuMemcpyHtoD_v2", Driver, COPY),
    op(112, "cuMemcpyDtoH_v2", Driver, COPY),
];

/// Id given to foreign op names the catalogue does not know; they are
/// numbered upward from here inside a read session.
pub const FIRST_UNKNOWN_OP_ID: u16 = 1000;

/// Looks a CUDA function up by id.
pub fn cuda_op(id: u16) -> Option<&'static CudaOpSpec> {
    CUDA_OPS.iter().find(|o| o.id == id)
}

/// Looks a CUDA function up by its exact symbol name, or by the short names
/// Ingero (Go) stores (`cudaStreamSync`, `cuMemAlloc`, ...).
pub fn cuda_op_by_name(name: &str) -> Option<&'static CudaOpSpec> {
    let canonical = match name {
        "cudaStreamSync" => "cudaStreamSynchronize",
        "cudaDeviceSync" => "cudaDeviceSynchronize",
        "cuMemAlloc" => "cuMemAlloc_v2",
        "cuMemFree" => "cuMemFree_v2",
        other => other,
    };
    CUDA_OPS.iter().find(|o| o.name == canonical)
}

/// Kinds of host (kernel) events, stored in `host_events.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HostKind {
    /// A thread was switched out; `dur_ns` is the time it then spent off-CPU;
    /// `arg` is 1 when it was still runnable (preempted: it waited in the run
    /// queue), 0 when it blocked by itself, -1 when unknown.
    SchedSwitch = 1,
    /// A thread was woken and queued to run.
    SchedWakeup = 2,
    /// The kernel allocated pages for the process; `arg` is the order (2^order pages).
    PageAlloc = 3,
    /// The process forked; `arg` is the child pid.
    Fork = 4,
    /// The process called exec.
    Exec = 5,
    /// The process (or thread) exited; `arg` is the exit code when known.
    Exit = 6,
}

impl HostKind {
    /// All kinds, in id order.
    pub const ALL: [HostKind; 6] = [
        HostKind::SchedSwitch,
        HostKind::SchedWakeup,
        HostKind::PageAlloc,
        HostKind::Fork,
        HostKind::Exec,
        HostKind::Exit,
    ];

    /// Stable numeric id stored on disk.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Inverse of [`HostKind::id`].
    pub fn from_id(id: i64) -> Option<HostKind> {
        HostKind::ALL.into_iter().find(|k| k.id() as i64 == id)
    }

    /// Name shown to users, matching the kernel tracepoint.
    pub fn name(self) -> &'static str {
        match self {
            HostKind::SchedSwitch => "sched_switch",
            HostKind::SchedWakeup => "sched_wakeup",
            HostKind::PageAlloc => "mm_page_alloc",
            HostKind::Fork => "process_fork",
            HostKind::Exec => "process_exec",
            HostKind::Exit => "process_exit",
        }
    }

    /// Parses a user-supplied name (either the tracepoint name or a short form).
    pub fn parse(name: &str) -> Option<HostKind> {
        match name {
            "sched_switch" | "switch" => Some(HostKind::SchedSwitch),
            "sched_wakeup" | "wakeup" => Some(HostKind::SchedWakeup),
            "mm_page_alloc" | "page_alloc" => Some(HostKind::PageAlloc),
            "process_fork" | "fork" | "sched_process_fork" => Some(HostKind::Fork),
            "process_exec" | "exec" | "sched_process_exec" => Some(HostKind::Exec),
            "process_exit" | "exit" | "sched_process_exit" => Some(HostKind::Exit),
            _ => None,
        }
    }
}

/// Direction of a memory copy, as `cudaMemcpyKind` numbers it.
pub mod copy_kind {
    /// Host to host.
    pub const HOST_TO_HOST: i64 = 0;
    /// Host to device (upload).
    pub const HOST_TO_DEVICE: i64 = 1;
    /// Device to host (download).
    pub const DEVICE_TO_HOST: i64 = 2;
    /// Device to device.
    pub const DEVICE_TO_DEVICE: i64 = 3;
    /// Inferred from pointers (unified addressing).
    pub const DEFAULT: i64 = 4;

    /// Short label for reports.
    pub fn label(kind: i64) -> &'static str {
        match kind {
            HOST_TO_HOST => "HtoH",
            HOST_TO_DEVICE => "HtoD",
            DEVICE_TO_HOST => "DtoH",
            DEVICE_TO_DEVICE => "DtoD",
            DEFAULT => "default",
            _ => "unknown",
        }
    }
}

/// Source code of an aggregate row: a CUDA call or a host event.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum AggSource {
    /// `code` is a CUDA op id.
    Cuda = 1,
    /// `code` is a [`HostKind`] id.
    Host = 2,
}

/// `cuda_calls.ret` values the capture stores for calls it never saw return
/// (real CUDA error codes are never negative). Their `dur_ns` is a lower bound.
pub mod unfinished {
    /// The thread exited, or the process was killed, inside the call; the
    /// duration runs to the exit.
    pub const THREAD_EXITED: i64 = -1;
    /// The call was still running when the capture stopped; the duration
    /// runs to the stop.
    pub const OPEN_AT_STOP: i64 = -2;

    /// True for a `ret` that marks an unfinished call.
    pub fn is_unfinished(ret: i64) -> bool {
        ret == THREAD_EXITED || ret == OPEN_AT_STOP
    }
}

/// `capture_losses.source` values: where a capture lost records, or (the
/// last two) calls it recorded without seeing them return.
pub mod loss_source {
    /// The kernel ring buffer was full: records dropped before user space.
    pub const RINGBUF: &str = "ringbuf";
    /// The in-flight call table was full: calls not timed.
    pub const CALL_TABLE: &str = "call_table";
    /// Records user space could not decode.
    pub const UNDECODABLE: &str = "undecodable";
    /// Process lifecycle notices dropped (process rows may lack a name).
    pub const NOTICE_QUEUE: &str = "notice_queue";
    /// Calls whose thread exited inside them (stored with ret -1).
    pub const UNFINISHED_CALL: &str = "unfinished_call";
    /// Calls still running at the stop (stored with ret -2).
    pub const OPEN_AT_STOP: &str = "open_at_stop";
}
