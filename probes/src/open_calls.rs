//! Calls still in flight when a capture stops. The entry probe keeps each
//! call in its thread's row until the return probe fires; whatever is left
//! once the probes are detached never returned inside the capture. A thread
//! stuck in `cudaStreamSynchronize` is exactly what a user wants to see, so
//! these calls are recorded (ret [`unfinished::OPEN_AT_STOP`], duration up to
//! the stop) instead of vanishing.

use crate::clock::Clock;
use aya::maps::{HashMap as BpfHashMap, Map, MapData, MapError};
use ingero_store::catalog::unfinished;
use ingero_store::{CudaCall, LaunchRun};

/// One open call in the kernel `threads` table (`struct call_val` in
/// `bpf/cuda.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
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
    /// `REC_CUDA_*` bits (`bpf/ingero_events.h`): nested or not.
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
/// launch_run` in `bpf/cuda.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
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

/// Most calls one thread is inside at once (`CALL_SLOTS` in `bpf/cuda.h`).
pub const CALL_SLOTS: usize = 4;

/// Value of the kernel `threads` table (`struct thread_calls`): the calls
/// one thread is inside, innermost last.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
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
}

impl ThreadCalls {
    /// The calls this thread is inside, outermost first.
    pub fn open(&self) -> &[CallVal] {
        &self.slot[..(self.depth as usize).min(CALL_SLOTS)]
    }
}

impl RunVal {
    /// The store's view of this run of thread `tid` in process `pid`, its
    /// untimed launches lasting `est_ns` each: the one conversion of a
    /// kernel run, whether it came as a ring record or was left in the table.
    pub fn to_launch_run(&self, pid: i32, tid: i32, est_ns: u64, clock: &Clock) -> LaunchRun {
        let ns = |v: u64| v.min(i64::MAX as u64) as i64;
        LaunchRun {
            ts_ns: clock.to_epoch(self.first_ts),
            last_ts_ns: clock.to_epoch(self.last_ts),
            pid,
            tid,
            op_id: self.op as u16,
            count: i64::from(self.n),
            est_ns: ns(est_ns),
            stream: self.stream as i64,
            threads: ns(self.threads),
            small: i64::from(self.small),
            timed: i64::from(self.timed),
            timed_dur_ns: ns(self.dur_sum),
            // The kernel starts the minimum at ~0; no timed launch, no minimum.
            timed_min_ns: if self.timed > 0 { ns(self.dur_min) } else { 0 },
            timed_max_ns: ns(self.dur_max),
            bounded: i64::from(self.bounded),
            bound_ns: ns(self.bound_sum),
        }
    }
}

// SAFETY: both are plain `repr(C)` integers with the kernel's layout and no
// invalid bit patterns.
unsafe impl aya::Pod for CallVal {}
// SAFETY: as above.
unsafe impl aya::Pod for RunVal {}
// SAFETY: as above.
unsafe impl aya::Pod for ThreadCalls {}

/// The kernel table of calls in flight.
pub struct OpenCalls {
    map: BpfHashMap<MapData, u32, ThreadCalls>,
}

impl OpenCalls {
    /// Wraps the `threads` map taken from the loaded object.
    pub fn new(map: Map) -> Result<OpenCalls, MapError> {
        Ok(OpenCalls {
            map: BpfHashMap::try_from(map)?,
        })
    }

    /// True while some thread is inside one of the functions `ops`
    /// (catalogue ids) as far as the table knows.
    pub fn any_open(&self, ops: &[u32]) -> bool {
        self.map
            .iter()
            .filter_map(Result::ok)
            .any(|(_, t)| t.open().iter().any(|c| ops.contains(&c.op)))
    }

    /// The runs of launches counted in the kernel still pending in the
    /// table (their threads made no call after them before the stop). Call
    /// once, after the probes are detached.
    pub fn left_runs(&self, clock: &Clock) -> Vec<LaunchRun> {
        let mut runs: Vec<LaunchRun> = self
            .map
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, t)| t.run.n > 0)
            .map(|(tid, t)| {
                let pid = t.slot[0].pid;
                let pid = if pid != 0 { pid as i32 } else { tid as i32 };
                t.run.to_launch_run(pid, tid as i32, t.est_ns, clock)
            })
            .collect();
        runs.sort_by_key(|r| r.ts_ns);
        runs
    }

    /// The calls left in the table, as store rows ending at `stopped_ns`
    /// (epoch ns), oldest first. Call once, after the probes are detached.
    pub fn left_open(&self, clock: &Clock, stopped_ns: i64) -> Vec<CudaCall> {
        let mut calls: Vec<CudaCall> = self
            .map
            .iter()
            .filter_map(Result::ok)
            .flat_map(|(tid, t)| t.open().to_vec().into_iter().map(move |v| (tid, v)))
            .map(|(tid, v)| {
                let ts_ns = clock.to_epoch(v.ts);
                CudaCall {
                    ts_ns,
                    pid: v.pid as i32,
                    tid: tid as i32,
                    op_id: v.op as u16,
                    dur_ns: stopped_ns.saturating_sub(ts_ns).max(0),
                    bytes: v.size as i64,
                    copy_kind: v.kind,
                    stream: v.stream as i64,
                    ret: unfinished::OPEN_AT_STOP,
                    grid: v.grid,
                    block: v.block,
                    shared_mem: v.shared_mem,
                    nested: v.flags & crate::decode::REC_CUDA_NESTED != 0,
                    dur_estimated: false,
                }
            })
            .collect();
        calls.sort_by_key(|c| c.ts_ns);
        calls
    }
}
