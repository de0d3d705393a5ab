//! Plain records that flow from capture into the store.

use crate::catalog::HostKind;
use serde::{Deserialize, Serialize};

/// One completed CUDA API call, as seen by an entry/return probe pair.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaCall {
    /// Entry time, nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// Process id (thread group id).
    pub pid: i32,
    /// Thread id that made the call.
    pub tid: i32,
    /// Catalogue id of the function ([`crate::catalog::CUDA_OPS`]).
    pub op_id: u16,
    /// Time spent inside the call.
    pub dur_ns: i64,
    /// Bytes moved or allocated, 0 when the function has no size.
    pub bytes: i64,
    /// `cudaMemcpyKind` of a copy ([`crate::catalog::copy_kind`]), -1 otherwise.
    pub copy_kind: i64,
    /// Stream handle, 0 for the default stream or when unknown.
    pub stream: i64,
    /// Return code (0 = success).
    pub ret: i64,
    /// Grid of a kernel launch in blocks (x, y, z); zeros for other calls.
    pub grid: [u32; 3],
    /// Block of a kernel launch in threads (x, y, z); zeros for other calls.
    pub block: [u32; 3],
    /// Dynamic shared memory of a kernel launch, bytes per block.
    pub shared_mem: u32,
    /// Made while another probed CUDA call of the same thread was in flight
    /// (see [`crate::nesting`]): the driver half of one runtime call.
    pub nested: bool,
    /// `dur_ns` was not measured but estimated (sampled launch timing: the
    /// thread's recent mean of its timed launches).
    pub dur_estimated: bool,
}

impl CudaCall {
    /// Threads a launch starts (grid x block), 0 when the call is not a
    /// kernel launch or its geometry is unknown.
    pub fn threads(&self) -> i64 {
        self.grid
            .iter()
            .chain(&self.block)
            .fold(1i64, |n, &d| n.saturating_mul(i64::from(d)))
    }
}

/// One host (kernel) event from a tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEvent {
    /// Event time, nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// Process id the event belongs to.
    pub pid: i32,
    /// Thread id the event belongs to.
    pub tid: i32,
    /// What happened.
    pub kind: HostKind,
    /// Duration where the kind has one (off-CPU time for a switch), else 0.
    pub dur_ns: i64,
    /// Kind-specific argument: preempted flag (switch), page order (the
    /// largest of a run), child pid, exit code.
    pub arg: i64,
    /// CPU the event happened on, -1 when unknown.
    pub cpu: i32,
    /// Events this row stands for: 1, or the allocations of a page-allocation
    /// run (consecutive allocations of one thread on one CPU, coalesced in
    /// the kernel; `ts_ns` is the first, `dur_ns` the span to the last one
    /// stamped with the clock: stamps come at least every 8th allocation and
    /// at each kernel tick, so the end is early by at most 7 allocations).
    pub count: i64,
    /// Bytes a page-allocation row covers (4 KiB pages), 0 for other kinds.
    pub bytes: i64,
}

impl HostEvent {
    /// Bytes a page allocation row covers, 0 for other kinds.
    pub fn page_bytes(&self) -> i64 {
        if self.kind == HostKind::PageAlloc {
            self.bytes
        } else {
            0
        }
    }
}

/// Anything the capture engine hands to the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A CUDA API call.
    Cuda(CudaCall),
    /// A kernel event.
    Host(HostEvent),
    /// Kernel launches of one thread counted in the kernel (no raw rows).
    LaunchRun(LaunchRun),
    /// Other calls of one thread counted in the kernel (no raw rows).
    CallFold(crate::call_fold::CallFold),
}

/// Consecutive outer driver launches of one thread counted in the kernel
/// instead of sent one by one: same function and stream, each entered less
/// than 1 ms after the previous ended. Two kinds of member:
/// - untimed (sampled launch timing, `--launch-sample N`, only inside dense
///   stretches): each lasts the thread's recent mean timed launch duration
///   (`est_ns`), flagged estimated; those whose thread's next probed call
///   entered less than 50 us later are proven shorter than that (`bounded`);
///   the others may have been slow (`unbounded()`);
/// - timed whose row was not kept (launch rows, with every launch timed): their exact
///   durations are summed (`timed_dur_ns`).
///
/// A run reaches the aggregates (every launch counted) and the activity
/// spans, never the raw rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchRun {
    /// First launch's entry, epoch ns.
    pub ts_ns: i64,
    /// Last launch's entry, epoch ns.
    pub last_ts_ns: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Catalogue id of the launch function.
    pub op_id: u16,
    /// Launches in the run, timed or not.
    pub count: i64,
    /// Estimated duration of each untimed one, ns.
    pub est_ns: i64,
    /// Stream handle.
    pub stream: i64,
    /// Threads launched, summed (grid x block).
    pub threads: i64,
    /// Launches of 1..=65,536 threads.
    pub small: i64,
    /// Of the launches, those timed (the rest are untimed).
    #[serde(default)]
    pub timed: i64,
    /// Summed measured durations of the timed ones, ns.
    #[serde(default)]
    pub timed_dur_ns: i64,
    /// Shortest timed one, ns (0 when none).
    #[serde(default)]
    pub timed_min_ns: i64,
    /// Longest timed one, ns.
    #[serde(default)]
    pub timed_max_ns: i64,
    /// Of the untimed ones, those proven shorter than 50 us: their thread's
    /// next probed call entered less than that after them. The others
    /// (untimed, not bounded) may have been slow.
    #[serde(default)]
    pub bounded: i64,
    /// Summed bounds of the bounded ones, ns: an upper bound of their time.
    #[serde(default)]
    pub bound_ns: i64,
}

impl LaunchRun {
    /// Entry times spread evenly over the run: where the activity spans
    /// place its launches (the kernel kept only the first and the last).
    pub fn spread(&self) -> impl Iterator<Item = i64> + '_ {
        let n = self.count.max(1);
        let span = (self.last_ts_ns - self.ts_ns).max(0);
        (0..n).map(move |i| {
            if n == 1 {
                self.ts_ns
            } else {
                self.ts_ns + span * i / (n - 1)
            }
        })
    }

    /// Launches of the run that were not timed.
    pub fn untimed(&self) -> i64 {
        (self.count.max(1) - self.timed.max(0)).max(0)
    }

    /// Untimed launches not proven short: followed by a gap of 50 us or
    /// more (or by the stop) before their thread's next probed call.
    pub fn unbounded(&self) -> i64 {
        (self.untimed() - self.bounded.max(0)).max(0)
    }

    /// Duration of the untimed ones, all estimated, ns.
    pub fn estimated_dur_ns(&self) -> i64 {
        self.est_ns.max(0).saturating_mul(self.untimed())
    }

    /// Time inside the run's launches: measured plus estimated, ns.
    pub fn total_dur_ns(&self) -> i64 {
        self.timed_dur_ns
            .max(0)
            .saturating_add(self.estimated_dur_ns())
    }

    /// Mean duration of one launch of the run, ns: where the activity spans
    /// take the length of each placed launch.
    pub fn mean_dur_ns(&self) -> i64 {
        self.total_dur_ns() / self.count.max(1)
    }
}

impl Event {
    /// Events this one stands for (a page-allocation run stands for many).
    pub fn count(&self) -> i64 {
        match self {
            Event::Cuda(_) => 1,
            Event::Host(h) => h.count.max(1),
            Event::LaunchRun(r) => r.count.max(1),
            Event::CallFold(f) => f.count.max(1),
        }
    }

    /// Timestamp of the event.
    pub fn ts_ns(&self) -> i64 {
        match self {
            Event::Cuda(c) => c.ts_ns,
            Event::Host(h) => h.ts_ns,
            Event::LaunchRun(r) => r.ts_ns,
            Event::CallFold(f) => f.ts_ns,
        }
    }
}

/// What is known about the machine and the capture when it starts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionInfo {
    /// Host name.
    pub host: String,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// CPU model name.
    pub cpu_model: String,
    /// Online CPU count.
    pub cpu_cores: i64,
    /// Total memory in MiB.
    pub mem_total_mb: i64,
    /// GPU model, empty when unknown.
    pub gpu_model: String,
    /// GPU driver version, empty when unknown.
    pub gpu_driver: String,
    /// Capture start, ns since the epoch.
    pub started_ns: i64,
    /// Capture stop, ns since the epoch (0 while running).
    pub stopped_ns: i64,
    /// Pids the capture was asked to follow (empty = everything).
    pub target_pids: Vec<i32>,
    /// Command line that was traced, when ingero launched it.
    pub command: String,
    /// Version of the tool that recorded the data.
    pub tool_version: String,
}

/// A process seen during capture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: i32,
    /// Parent process id, 0 when unknown.
    pub ppid: i32,
    /// Short command name (`comm`).
    pub comm: String,
    /// Full command line, empty when unknown.
    pub cmdline: String,
    /// First time the process was seen, ns since the epoch.
    pub first_seen_ns: i64,
    /// Last time the process was seen, ns since the epoch.
    pub last_seen_ns: i64,
}

/// A periodic whole-system sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SystemSnapshot {
    /// Sample time, ns since the epoch.
    pub ts_ns: i64,
    /// Busy CPU share over the last interval, 0-100.
    pub cpu_pct: f64,
    /// Used memory share, 0-100.
    pub mem_used_pct: f64,
    /// Available memory in MiB.
    pub mem_avail_mb: i64,
    /// Swap in use in MiB.
    pub swap_used_mb: i64,
    /// One-minute load average.
    pub load1: f64,
    /// Runnable tasks at sample time (`procs_running`), -1 when unknown.
    pub procs_running: i64,
}
