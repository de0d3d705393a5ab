//! Values of the kernel tables user space reads at the stop, mirroring
//! `bpf/cuda.h` (calls in flight, pending launch runs) and
//! `bpf/page_runs.h` (pending page runs). The build checks every size,
//! offset and field type here against those headers.

use bytemuck::{Pod, Zeroable};

/// Most calls one thread is inside at once (`CALL_SLOTS` in `bpf/cuda.h`):
/// the room in [`ThreadCalls::slot`].
pub const CALL_SLOTS: usize = 4;

/// Fold slots per thread (`FOLD_SLOTS` in `bpf/call_folds.h`): the room in
/// [`ThreadCalls::fold`].
pub const FOLD_SLOTS: usize = 8;
/// Row budgets per thread (`BUDGET_SLOTS` in `bpf/call_folds.h`).
pub const BUDGET_SLOTS: usize = 16;

/// A thread's pending fold of calls of one function, nesting and stream
/// (`struct call_fold` in `bpf/call_folds.h`), read at the stop; a
/// `RecCallFold` carries the same numbers when it is sent.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct FoldVal {
    /// First call's entry, CLOCK_MONOTONIC ns.
    pub first_ts: u64,
    /// Last call's entry.
    pub last_ts: u64,
    /// Last call's return.
    pub last_end: u64,
    /// Stream.
    pub stream: u64,
    /// Summed durations, ns.
    pub dur_sum: u64,
    /// Summed bytes.
    pub bytes: u64,
    /// Shortest, ns.
    pub dur_min: u32,
    /// Longest, ns.
    pub dur_max: u32,
    /// Calls, 0 when the slot is free.
    pub n: u32,
    /// Catalogue id.
    pub op: u16,
    /// 1 when nested.
    pub nested: u16,
    /// Kernel launches: grid x block summed.
    pub threads: u64,
    /// Kernel launches of 1..65,536 threads.
    pub small: u32,
    /// Padding.
    pub pad: u32,
}

/// Rows kept in the current window by the ops of one budget slot (`struct
/// row_budget` in `bpf/call_folds.h`); the kernel's own bookkeeping.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RowBudget {
    /// Window start, CLOCK_MONOTONIC ns.
    pub since: u64,
    /// Rows kept in it.
    pub kept: u32,
    /// Padding.
    pub pad: u32,
}

/// One open call in the kernel `threads` table (`struct call_val`), read at
/// the stop to record calls that never returned.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct CallVal {
    /// Entry time, CLOCK_MONOTONIC ns.
    pub ts: u64,
    /// Bytes argument.
    pub size: u64,
    /// Copy kind, -1 when none.
    pub kind: i64,
    /// Stream handle.
    pub stream: u64,
    /// Thread group id.
    pub pid: u32,
    /// `REC_CUDA_*` bits: nested or not.
    pub flags: u32,
    /// Launch grid (x, y, z), zeros for other calls.
    pub grid: [u32; 3],
    /// Launch block (x, y, z), zeros for other calls.
    pub block: [u32; 3],
    /// Launch dynamic shared memory, bytes per block.
    pub shared_mem: u32,
    /// Catalogue id of the function.
    pub op: u32,
}

/// A thread's pending run of launches counted in the kernel (`struct
/// launch_run`), read at the stop; a `RecLaunchRun` carries the same
/// numbers when the run is flushed.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct RunVal {
    /// First launch's entry, CLOCK_MONOTONIC ns.
    pub first_ts: u64,
    /// Last launch's entry.
    pub last_ts: u64,
    /// Last launch's return (its entry when untimed).
    pub last_end: u64,
    /// Stream.
    pub stream: u64,
    /// Threads launched, summed.
    pub threads: u64,
    /// Summed durations of the timed launches.
    pub dur_sum: u64,
    /// Shortest timed launch.
    pub dur_min: u64,
    /// Longest timed launch.
    pub dur_max: u64,
    /// Launches, 0 when none is pending.
    pub n: u32,
    /// Of which small.
    pub small: u32,
    /// Catalogue id of the launch function.
    pub op: u32,
    /// Of the launches, those timed.
    pub timed: u32,
    /// Summed bounds of the untimed launches proven shorter than 50 us.
    pub bound_sum: u64,
    /// Untimed launches proven shorter than 50 us (the gap to their
    /// thread's next probed call was shorter).
    pub bounded: u32,
    /// 1 while the last launch is untimed and not yet bounded.
    pub last_open: u32,
}

/// Value of the kernel `threads` table (`struct thread_calls`): the calls
/// one thread is inside, innermost last, and its pending launch run.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Pod, Zeroable)]
pub struct ThreadCalls {
    /// Slots in use.
    pub depth: u32,
    /// Outer driver launches seen under sampled launch timing.
    pub launches: u32,
    /// The thread's moving mean of its timed outer launches, in ns.
    pub est_ns: u64,
    /// Entry of its last outer driver launch (sampled timing).
    pub last_launch: u64,
    /// 1 while its open outer launch is a sample of a dense stretch.
    pub learn: u32,
    /// Padding.
    pub pad: u32,
    /// Launches counted in the kernel, not yet sent.
    pub run: RunVal,
    /// The open calls, `depth` of them.
    pub slot: [CallVal; CALL_SLOTS],
    /// First entry among its pending folds, 0 when none.
    pub fold_since: u64,
    /// Latest return among them.
    pub fold_end: u64,
    /// Calls folded in the kernel, not yet sent.
    pub fold: [FoldVal; FOLD_SLOTS],
    /// Row budgets of its ops.
    pub budget: [RowBudget; BUDGET_SLOTS],
}

/// One CPU's open run of page allocations (`struct page_run` in
/// `bpf/page_runs.h`), read at the stop so no counted allocation is lost.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct PageRun {
    /// Thread group id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// First allocation, CLOCK_MONOTONIC ns.
    pub start: u64,
    /// Latest allocation.
    pub last: u64,
    /// Allocations counted, 0 when the slot holds no run.
    pub count: u32,
    /// 4 KiB pages those allocations took.
    pub pages: u32,
    /// Largest order seen.
    pub order: u32,
    /// Allocations since the run's latest clock stamp (the kernel's own
    /// bookkeeping: `last` is that stamp).
    pub unstamped: u32,
    /// The thread's kernel task address (the kernel's join test; not stored).
    pub task: u64,
    /// The kernel's tick count at the latest stamp (not stored).
    pub tick: u64,
}

// SAFETY: each type derives `bytemuck::Pod`, which proves it `repr(C)`,
// without padding and valid for every bit pattern; the build holds its
// layout to the kernel's.
unsafe impl aya::Pod for CallVal {}
// SAFETY: as above.
unsafe impl aya::Pod for RunVal {}
// SAFETY: as above.
unsafe impl aya::Pod for ThreadCalls {}
// SAFETY: as above.
unsafe impl aya::Pod for PageRun {}
// SAFETY: as above.
unsafe impl aya::Pod for FoldVal {}
// SAFETY: as above.
unsafe impl aya::Pod for RowBudget {}
