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
    /// `libnccl.so` (collective communication between GPUs and ranks).
    Nccl,
}

impl CudaApi {
    /// Stable text form stored in `cuda_ops.api`.
    pub fn as_str(self) -> &'static str {
        match self {
            CudaApi::Runtime => "runtime",
            CudaApi::Driver => "driver",
            CudaApi::Nccl => "nccl",
        }
    }

    /// Parses the stored text form; unknown text reads as the runtime.
    pub fn parse(s: &str) -> CudaApi {
        match s {
            "driver" => CudaApi::Driver,
            "nccl" => CudaApi::Nccl,
            _ => CudaApi::Runtime,
        }
    }
}

/// What a CUDA function does, for grouping in analyses. The classes keep
/// apart what the GPU-side reading of a trace needs to tell apart: a kernel
/// launch from a graph launch, a blocking synchronize from a non-blocking
/// poll, a stream-ordered (asynchronous) allocation from a blocking one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// Enqueues one kernel (its grid and block are in the raw row).
    Launch,
    /// Moves bytes (host to device, device to host, device to device, peer).
    Copy,
    /// Blocks the host until GPU work finishes: stream, device/context or
    /// event synchronize.
    Sync,
    /// Allocates device or pinned host memory, blocking (not stream-ordered).
    Alloc,
    /// Releases memory, blocking (a `cudaFree` waits for the device).
    Free,
    /// Anything else (memsets among them).
    Other,
    /// Enqueues a whole instantiated CUDA graph (many kernels, one call).
    GraphLaunch,
    /// Prepares a graph for launch: instantiate (host-side) or upload
    /// (stream-ordered copy of the graph to the device).
    GraphSetup,
    /// Allocates memory in stream order (`cudaMallocAsync`): returns at once.
    AllocAsync,
    /// Frees memory in stream order (`cudaFreeAsync`): returns at once.
    FreeAsync,
    /// Records an event on a stream (a marker later waited on or polled).
    EventRecord,
    /// Makes a stream wait for an event, on the device: the host does not block.
    StreamWait,
    /// Asks whether a stream or event has finished, without blocking.
    Query,
    /// An NCCL collective (all-reduce, broadcast, reduce, all-gather,
    /// reduce-scatter): every rank of the communicator takes part, and none
    /// finishes before the last one has arrived.
    Collective,
    /// An NCCL point-to-point transfer (send or receive) with one peer rank.
    PointToPoint,
    /// Brackets NCCL calls into one group (`ncclGroupStart`/`ncclGroupEnd`):
    /// the grouped work is issued at the end of the group.
    Group,
    /// Makes, splits, finalises or destroys an NCCL communicator.
    CommSetup,
}

impl OpClass {
    /// Every class, in declaration order.
    pub const ALL: [OpClass; 17] = [
        OpClass::Launch,
        OpClass::Copy,
        OpClass::Sync,
        OpClass::Alloc,
        OpClass::Free,
        OpClass::Other,
        OpClass::GraphLaunch,
        OpClass::GraphSetup,
        OpClass::AllocAsync,
        OpClass::FreeAsync,
        OpClass::EventRecord,
        OpClass::StreamWait,
        OpClass::Query,
        OpClass::Collective,
        OpClass::PointToPoint,
        OpClass::Group,
        OpClass::CommSetup,
    ];

    /// Stable text form stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            OpClass::Launch => "launch",
            OpClass::Copy => "copy",
            OpClass::Sync => "sync",
            OpClass::Alloc => "alloc",
            OpClass::Free => "free",
            OpClass::Other => "other",
            OpClass::GraphLaunch => "graph_launch",
            OpClass::GraphSetup => "graph_setup",
            OpClass::AllocAsync => "alloc_async",
            OpClass::FreeAsync => "free_async",
            OpClass::EventRecord => "event_record",
            OpClass::StreamWait => "stream_wait",
            OpClass::Query => "query",
            OpClass::Collective => "collective",
            OpClass::PointToPoint => "p2p",
            OpClass::Group => "group",
            OpClass::CommSetup => "comm_setup",
        }
    }

    /// Parses the stored text form; unknown text maps to `Other`.
    pub fn parse(s: &str) -> OpClass {
        OpClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .unwrap_or(OpClass::Other)
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

/// Suffixes of the per-thread-default-stream variants: `_ptsz` for
/// functions that take a stream, `_ptds` for those that do not.
pub const PER_THREAD_SUFFIXES: [&str; 2] = ["_ptsz", "_ptds"];

impl CudaOpSpec {
    /// The function this one is a per-thread-default-stream variant of
    /// (`cudaMemcpyAsync` for `cudaMemcpyAsync_ptsz`), else its own name.
    pub fn base_name(&self) -> &'static str {
        PER_THREAD_SUFFIXES
            .iter()
            .find_map(|s| self.name.strip_suffix(s))
            .unwrap_or(self.name)
    }

    /// True for a `_ptsz`/`_ptds` variant: its "default stream" (stream 0)
    /// is the calling thread's own stream, not the legacy shared one.
    pub fn per_thread_stream(&self) -> bool {
        self.base_name() != self.name
    }
}

const fn op(id: u16, name: &'static str, api: CudaApi, class: OpClass) -> CudaOpSpec {
    CudaOpSpec {
        id,
        name,
        api,
        class,
    }
}

use CudaApi::{Driver, Nccl, Runtime};
use OpClass::{
    Alloc, AllocAsync, Collective, CommSetup, EventRecord, Free, FreeAsync, GraphLaunch,
    GraphSetup, Group, Launch, Other, PointToPoint, Query, StreamWait, Sync,
};
const COPY: OpClass = OpClass::Copy;

/// Every CUDA function ingero knows by name. Per-thread-default-stream
/// variants (`_ptsz`, `_ptds`: what code built with
/// `--default-stream per-thread` calls) have their own ids, with the class
/// of their base function, so the data keeps the exact name;
/// [`CudaOpSpec::base_name`] groups them with the base.
#[rustfmt::skip]
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
    op(15, "cudaLaunchKernel_ptsz", Runtime, Launch),
    op(16, "cudaLaunchKernelExC", Runtime, Launch),
    op(17, "cudaLaunchKernelExC_ptsz", Runtime, Launch),
    op(18, "cudaLaunchCooperativeKernel", Runtime, Launch),
    op(19, "cudaLaunchCooperativeKernel_ptsz", Runtime, Launch),
    op(20, "cudaGraphLaunch", Runtime, GraphLaunch),
    op(21, "cudaGraphLaunch_ptsz", Runtime, GraphLaunch),
    op(22, "cudaGraphUpload", Runtime, GraphSetup),
    op(23, "cudaGraphUpload_ptsz", Runtime, GraphSetup),
    op(24, "cudaGraphInstantiate", Runtime, GraphSetup),
    op(25, "cudaGraphInstantiateWithFlags", Runtime, GraphSetup),
    op(26, "cudaGraphInstantiateWithParams", Runtime, GraphSetup),
    op(27, "cudaGraphInstantiateWithParams_ptsz", Runtime, GraphSetup),
    op(28, "cudaMallocAsync", Runtime, AllocAsync),
    op(29, "cudaMallocAsync_ptsz", Runtime, AllocAsync),
    op(30, "cudaMallocFromPoolAsync", Runtime, AllocAsync),
    op(31, "cudaMallocFromPoolAsync_ptsz", Runtime, AllocAsync),
    op(32, "cudaFreeAsync", Runtime, FreeAsync),
    op(33, "cudaFreeAsync_ptsz", Runtime, FreeAsync),
    op(34, "cudaEventRecord", Runtime, EventRecord),
    op(35, "cudaEventRecord_ptsz", Runtime, EventRecord),
    op(36, "cudaEventRecordWithFlags", Runtime, EventRecord),
    op(37, "cudaEventRecordWithFlags_ptsz", Runtime, EventRecord),
    op(38, "cudaEventQuery", Runtime, Query),
    op(39, "cudaStreamQuery", Runtime, Query),
    op(40, "cudaStreamQuery_ptsz", Runtime, Query),
    op(41, "cudaStreamWaitEvent", Runtime, StreamWait),
    op(42, "cudaStreamWaitEvent_ptsz", Runtime, StreamWait),
    op(43, "cudaStreamSynchronize_ptsz", Runtime, Sync),
    op(44, "cudaMemcpy_ptds", Runtime, COPY),
    op(45, "cudaMemcpyAsync_ptsz", Runtime, COPY),
    op(46, "cudaMemcpyPeer", Runtime, COPY),
    op(47, "cudaMemcpyPeerAsync", Runtime, COPY),
    op(48, "cudaMemset_ptds", Runtime, Other),
    op(49, "cudaMemsetAsync_ptsz", Runtime, Other),
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
    op(113, "cuLaunchKernel_ptsz", Driver, Launch),
    op(114, "cuLaunchKernelEx", Driver, Launch),
    op(115, "cuLaunchKernelEx_ptsz", Driver, Launch),
    op(116, "cuLaunchCooperativeKernel", Driver, Launch),
    op(117, "cuLaunchCooperativeKernel_ptsz", Driver, Launch),
    op(118, "cuGraphLaunch", Driver, GraphLaunch),
    op(119, "cuGraphLaunch_ptsz", Driver, GraphLaunch),
    op(120, "cuGraphUpload", Driver, GraphSetup),
    op(121, "cuGraphUpload_ptsz", Driver, GraphSetup),
    op(122, "cuGraphInstantiateWithFlags", Driver, GraphSetup),
    op(123, "cuGraphInstantiateWithParams", Driver, GraphSetup),
    op(124, "cuGraphInstantiateWithParams_ptsz", Driver, GraphSetup),
    op(125, "cuMemAllocAsync", Driver, AllocAsync),
    op(126, "cuMemAllocAsync_ptsz", Driver, AllocAsync),
    op(127, "cuMemAllocFromPoolAsync", Driver, AllocAsync),
    op(128, "cuMemAllocFromPoolAsync_ptsz", Driver, AllocAsync),
    op(129, "cuMemFreeAsync", Driver, FreeAsync),
    op(130, "cuMemFreeAsync_ptsz", Driver, FreeAsync),
    op(131, "cuEventRecord", Driver, EventRecord),
    op(132, "cuEventRecord_ptsz", Driver, EventRecord),
    op(133, "cuEventRecordWithFlags", Driver, EventRecord),
    op(134, "cuEventRecordWithFlags_ptsz", Driver, EventRecord),
    op(135, "cuEventSynchronize", Driver, Sync),
    op(136, "cuEventQuery", Driver, Query),
    op(137, "cuStreamQuery", Driver, Query),
    op(138, "cuStreamQuery_ptsz", Driver, Query),
    op(139, "cuStreamWaitEvent", Driver, StreamWait),
    op(140, "cuStreamWaitEvent_ptsz", Driver, StreamWait),
    op(141, "cuStreamSynchronize_ptsz", Driver, Sync),
    op(142, "cuCtxSynchronize_v2", Driver, Sync),
    op(143, "cuMemcpy_ptds", Driver, COPY),
    op(144, "cuMemcpyAsync_ptsz", Driver, COPY),
    op(145, "cuMemcpyHtoD_v2_ptds", Driver, COPY),
    op(146, "cuMemcpyDtoH_v2_ptds", Driver, COPY),
    op(147, "cuMemcpyHtoDAsync_v2_ptsz", Driver, COPY),
    op(148, "cuMemcpyDtoHAsync_v2_ptsz", Driver, COPY),
    op(149, "cuMemcpyDtoD_v2", Driver, COPY),
    op(150, "cuMemcpyDtoD_v2_ptds", Driver, COPY),
    op(151, "cuMemcpyDtoDAsync_v2", Driver, COPY),
    op(152, "cuMemcpyDtoDAsync_v2_ptsz", Driver, COPY),
    op(153, "cuMemcpyPeer", Driver, COPY),
    op(154, "cuMemcpyPeer_ptds", Driver, COPY),
    op(155, "cuMemcpyPeerAsync", Driver, COPY),
    op(156, "cuMemcpyPeerAsync_ptsz", Driver, COPY),
    op(201, "ncclAllReduce", Nccl, Collective),
    op(202, "ncclBroadcast", Nccl, Collective),
    op(203, "ncclReduce", Nccl, Collective),
    op(204, "ncclAllGather", Nccl, Collective),
    op(205, "ncclReduceScatter", Nccl, Collective),
    op(206, "ncclSend", Nccl, PointToPoint),
    op(207, "ncclRecv", Nccl, PointToPoint),
    op(208, "ncclGroupStart", Nccl, Group),
    op(209, "ncclGroupEnd", Nccl, Group),
    op(210, "ncclCommInitRank", Nccl, CommSetup),
    op(211, "ncclCommInitRankConfig", Nccl, CommSetup),
    op(212, "ncclCommInitRankScalable", Nccl, CommSetup),
    op(213, "ncclCommInitAll", Nccl, CommSetup),
    op(214, "ncclCommSplit", Nccl, CommSetup),
    op(215, "ncclCommFinalize", Nccl, CommSetup),
    op(216, "ncclCommDestroy", Nccl, CommSetup),
    op(217, "ncclCommAbort", Nccl, CommSetup),
    op(218, "ncclBcast", Nccl, Collective),
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_and_names_are_unique() {
        let ids: HashSet<u16> = CUDA_OPS.iter().map(|o| o.id).collect();
        let names: HashSet<&str> = CUDA_OPS.iter().map(|o| o.name).collect();
        assert_eq!(ids.len(), CUDA_OPS.len());
        assert_eq!(names.len(), CUDA_OPS.len());
        assert!(CUDA_OPS.iter().all(|o| o.id < FIRST_UNKNOWN_OP_ID));
    }

    #[test]
    fn classes_read_back_from_their_text() {
        for class in OpClass::ALL {
            assert_eq!(OpClass::parse(class.as_str()), class);
        }
        assert_eq!(OpClass::parse("no such class"), OpClass::Other);
    }

    #[test]
    fn per_thread_variants_share_api_and_class_with_their_base() {
        let mut variants = 0;
        for o in CUDA_OPS.iter().filter(|o| o.per_thread_stream()) {
            let base = cuda_op_by_name(o.base_name())
                .unwrap_or_else(|| panic!("{}: base {} not catalogued", o.name, o.base_name()));
            assert_eq!((base.api, base.class), (o.api, o.class), "{}", o.name);
            variants += 1;
        }
        assert!(variants > 20, "{variants} per-thread variants");
        let launch = cuda_op_by_name("cudaLaunchKernel_ptsz").map(|o| o.base_name());
        assert_eq!(launch, Some("cudaLaunchKernel"));
    }
}
