//! Calls still in flight when a capture stops. The entry probe keeps each
//! call in its thread's row until the return probe fires; whatever is left
//! once the probes are detached never returned inside the capture. A thread
//! stuck in `cudaStreamSynchronize` is exactly what a user wants to see, so
//! these calls are recorded (ret [`unfinished::OPEN_AT_STOP`], duration up to
//! the stop) instead of vanishing.

use crate::clock::Clock;
use crate::records::REC_CUDA_NESTED;
use aya::maps::{HashMap as BpfHashMap, Map, MapData, MapError};
use ingero_store::catalog::unfinished;
use ingero_store::{CallFold, CudaCall, LaunchRun};

// The table layouts live with the other kernel layouts in `records`; they
// stay reachable here, where the table is read.
pub use crate::records::{CallVal, FoldVal, RunVal, ThreadCalls, CALL_SLOTS};

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

impl FoldVal {
    /// The store's view of this fold of thread `tid` in process `pid`: the
    /// one conversion of a kernel fold, whether it came as a ring record or
    /// was left in the table.
    pub fn to_call_fold(&self, pid: i32, tid: i32, clock: &Clock) -> CallFold {
        let ns = |v: u64| v.min(i64::MAX as u64) as i64;
        CallFold {
            ts_ns: clock.to_epoch(self.first_ts),
            last_ts_ns: clock.to_epoch(self.last_ts),
            last_end_ns: clock.to_epoch(self.last_end),
            pid,
            tid,
            op_id: self.op,
            nested: self.nested != 0,
            stream: self.stream as i64,
            count: i64::from(self.n),
            dur_ns: ns(self.dur_sum),
            min_dur_ns: if self.n > 0 {
                i64::from(self.dur_min)
            } else {
                0
            },
            max_dur_ns: i64::from(self.dur_max),
            bytes: ns(self.bytes),
            threads: ns(self.threads),
            small: i64::from(self.small),
        }
    }
}

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

    /// The folds of calls counted in the kernel still pending in the table
    /// (their threads made no call that sent them before the stop). Call
    /// once, after the probes are detached.
    pub fn left_folds(&self, clock: &Clock) -> Vec<CallFold> {
        let mut folds: Vec<CallFold> = self
            .map
            .iter()
            .filter_map(Result::ok)
            .flat_map(|(tid, t)| {
                let pid = t.slot[0].pid;
                let pid = if pid != 0 { pid as i32 } else { tid as i32 };
                t.fold
                    .into_iter()
                    .filter(|f| f.n > 0)
                    .map(move |f| f.to_call_fold(pid, tid as i32, clock))
            })
            .collect();
        folds.sort_by_key(|f| f.last_ts_ns);
        folds
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
                    nested: v.flags & REC_CUDA_NESTED != 0,
                    dur_estimated: false,
                }
            })
            .collect();
        calls.sort_by_key(|c| c.ts_ns);
        calls
    }
}
