//! The ring-buffer records and their constants, mirroring
//! `bpf/ingero_events.h` field for field. The build checks every size,
//! offset, field type and constant here against the header.

use bytemuck::{Pod, Zeroable};

/// Tag (first `u32`) of a [`RecCuda`]: one completed CUDA or NCCL call.
pub const REC_CUDA: u32 = 1;
/// Tag of a [`RecHost`]: a switch, wakeup or page allocation.
pub const REC_HOST: u32 = 2;
/// Tag of a [`RecProc`]: a fork, exec or exit, with the command name.
pub const REC_PROC: u32 = 3;
/// Tag of a [`RecNotice`]: a tracked process mapped executable code.
pub const REC_MAPEXEC: u32 = 4;
/// Tag of a [`RecStack`]: a user and kernel stack sample.
pub const REC_STACK: u32 = 5;
/// Tag of a [`RecPages`]: a run of page allocations of one thread.
pub const REC_PAGES: u32 = 6;
/// Tag of a [`RecLaunchRun`]: launches of one thread counted in the kernel.
pub const REC_LAUNCH_RUN: u32 = 7;
/// Tag of a [`RecCallFold`]: other calls of one thread counted in the kernel.
pub const REC_CALL_FOLD: u32 = 8;

/// Host kind of a context switch; the kernel side numbers host kinds as the
/// store's `HostKind` ids, so the decoder maps them with `HostKind::from_id`.
pub const HK_SWITCH: u16 = 1;
/// Host kind of a wakeup.
pub const HK_WAKEUP: u16 = 2;
/// Host kind of a page allocation.
pub const HK_PAGE_ALLOC: u16 = 3;
/// Host kind of a fork.
pub const HK_FORK: u16 = 4;
/// Host kind of an exec.
pub const HK_EXEC: u16 = 5;
/// Host kind of a process exit.
pub const HK_EXIT: u16 = 6;

/// Slot of the per-CPU `losses` array counting records dropped because the
/// ring buffer was full.
pub const LOSS_RINGBUF: u32 = 0;
/// Slot counting calls not timed because the in-flight table was full.
pub const LOSS_CALL_MAP: u32 = 1;
/// Slot counting calls whose thread exited inside them.
pub const LOSS_UNFINISHED: u32 = 2;
/// Slots in the `losses` array.
pub const LOSS_SLOTS: u32 = 4;

/// `RecCuda::flags` bit: the call was entered inside another probed call of
/// the same thread (the driver half of a runtime call), so analysis counts
/// one logical call once.
pub const REC_CUDA_NESTED: u32 = 1;
/// `RecCuda::flags` bit: the duration is the thread's recent mean of timed
/// launches, not a measurement (sampled launch timing).
pub const REC_CUDA_DUR_ESTIMATED: u32 = 2;

/// `RecCuda::ret` of a call whose thread exited before it returned (the
/// store's `unfinished::THREAD_EXITED`).
pub const RET_THREAD_EXITED: i64 = -1;

/// `RecStack::kind` of a CPU-clock sample of a running thread.
pub const STACK_ON_CPU: u16 = 1;
/// `RecStack::kind` of a CUDA-calling thread leaving the CPU.
pub const STACK_OFF_CPU: u16 = 2;

/// Frames room in `RecStack::user` (the kernel's default
/// `perf_event_max_stack`).
pub const STACK_USER_FRAMES: usize = 127;
/// Frames room in `RecStack::kernel` (enough for a scheduler path).
pub const STACK_KERNEL_FRAMES: usize = 48;

/// One completed CUDA call (`struct rec_cuda`); NCCL calls reuse it as
/// `bpf/ingero_events.h` describes (`crate::nccl_record` splits them).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecCuda {
    /// [`REC_CUDA`].
    pub rec: u32,
    /// Catalogue id of the function.
    pub op: u16,
    /// CPU the call returned on.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Entry, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Return minus entry, ns.
    pub dur: u64,
    /// Bytes argument, 0 when none.
    pub size: u64,
    /// `cudaMemcpyKind`, -1 when none.
    pub kind: i64,
    /// Stream handle, 0 when none.
    pub stream: u64,
    /// Return code, or [`RET_THREAD_EXITED`].
    pub ret: i64,
    /// Kernel launches: grid in blocks (x, y, z), else 0.
    pub grid: [u32; 3],
    /// Kernel launches: block in threads (x, y, z), else 0.
    pub block: [u32; 3],
    /// Kernel launches: dynamic shared memory, bytes per block.
    pub shared_mem: u32,
    /// `REC_CUDA_*` bits.
    pub flags: u32,
}

/// A switch, wakeup or single page allocation (`struct rec_host`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecHost {
    /// [`REC_HOST`].
    pub rec: u32,
    /// `HK_*`.
    pub kind: u16,
    /// CPU it happened on.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Switch: the off-CPU interval, ns; else 0.
    pub dur: u64,
    /// Switch: the kernel's `prev_state` (0 = preempted); wakeup: the
    /// waker's process; page allocation: the order.
    pub arg: i64,
}

/// Consecutive page allocations of one thread on one CPU (`struct
/// rec_pages`, sent by `bpf/page_runs.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecPages {
    /// [`REC_PAGES`].
    pub rec: u32,
    /// Largest order in the run.
    pub order: u16,
    /// CPU the run was counted on.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// First allocation, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Last minus first allocation, ns.
    pub dur: u64,
    /// Allocations.
    pub count: u32,
    /// 4 KiB pages.
    pub pages: u32,
}

/// Consecutive outer driver launches of one thread counted in the kernel
/// (`struct rec_launch_run`): untimed ones under sampled launch timing, or
/// timed ones whose rows were not kept under launch rows.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecLaunchRun {
    /// [`REC_LAUNCH_RUN`].
    pub rec: u32,
    /// Catalogue id of the launch function.
    pub op: u16,
    /// CPU of the flush.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// First launch's entry, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Last launch's entry.
    pub last_ts: u64,
    /// The thread's mean timed launch duration at the flush.
    pub est_ns: u64,
    /// Stream.
    pub stream: u64,
    /// Grid x block summed over the launches (saturating).
    pub threads: u64,
    /// Launches.
    pub count: u32,
    /// Of which with 1..65,536 threads.
    pub small: u32,
    /// Of which timed (the rest last `est_ns` each).
    pub timed: u32,
    /// Untimed ones proven shorter than 50 us.
    pub bounded: u32,
    /// Last launch's return (its entry when untimed).
    pub last_end: u64,
    /// Summed durations of the timed ones.
    pub dur_sum: u64,
    /// Shortest timed one (~0 when none).
    pub dur_min: u64,
    /// Longest timed one.
    pub dur_max: u64,
    /// Summed bounds of the bounded untimed ones.
    pub bound_sum: u64,
}

/// Calls of one function, nesting and stream of a thread counted in the
/// kernel instead of sent one by one (`struct rec_call_fold`, written by
/// `bpf/call_folds.h`): all succeeded and lasted less than 50 us; count,
/// summed duration and bytes are exact.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecCallFold {
    /// [`REC_CALL_FOLD`].
    pub rec: u32,
    /// Catalogue id of the function.
    pub op: u16,
    /// CPU of the flush.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// First call's entry, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Last call's entry.
    pub last_ts: u64,
    /// Last call's return.
    pub last_end: u64,
    /// Stream.
    pub stream: u64,
    /// Summed durations, ns.
    pub dur_sum: u64,
    /// Summed bytes arguments.
    pub bytes: u64,
    /// Shortest, ns.
    pub dur_min: u32,
    /// Longest, ns.
    pub dur_max: u32,
    /// Calls.
    pub count: u32,
    /// 1 when made inside another probed call of the thread.
    pub nested: u32,
    /// Kernel launches: grid x block summed (saturating).
    pub threads: u64,
    /// Kernel launches of 1..65,536 threads.
    pub small: u32,
    /// Padding.
    pub pad: u32,
}

/// A fork, exec or exit (`struct rec_proc`), carrying the task's command
/// name so processes can be named without reading `/proc` in time.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecProc {
    /// [`REC_PROC`].
    pub rec: u32,
    /// `HK_FORK`, `HK_EXEC` or `HK_EXIT`.
    pub kind: u16,
    /// CPU it happened on.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Fork: the child's process id; exit: the exit status (128 + signal
    /// when killed); exec: 0.
    pub arg: i64,
    /// Command name, NUL-padded.
    pub comm: [u8; 16],
}

/// A stack sample (`struct rec_stack`): on-CPU, or a CUDA-calling thread
/// leaving the CPU.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecStack {
    /// [`REC_STACK`].
    pub rec: u32,
    /// [`STACK_ON_CPU`] or [`STACK_OFF_CPU`].
    pub kind: u16,
    /// CPU of the sample.
    pub cpu: u16,
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// CLOCK_MONOTONIC ns (off-CPU: the switch-out time).
    pub ts: u64,
    /// Bytes of `user` filled, or a negative errno.
    pub user_len: i32,
    /// Bytes of `kernel` filled, or a negative errno.
    pub kernel_len: i32,
    /// User frames, leaf first.
    pub user: [u64; STACK_USER_FRAMES],
    /// Kernel frames, leaf first.
    pub kernel: [u64; STACK_KERNEL_FRAMES],
}

/// A lifecycle notice without a body (`struct rec_notice`): a tracked
/// process mapped executable code, so a library may have appeared.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RecNotice {
    /// [`REC_MAPEXEC`].
    pub rec: u32,
    /// Thread group id.
    pub pid: u32,
    /// CLOCK_MONOTONIC ns.
    pub ts: u64,
}
