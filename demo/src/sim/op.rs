//! What simulated threads do: the operations a [`Program`] hands the scheduler.

use std::collections::VecDeque;

/// Index of a token channel (a bounded queue between threads) in the simulation.
pub type ChanId = usize;

/// Page allocations a CPU burst performs, spread evenly over the burst.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pages {
    /// Allocation order (2^order pages of 4 KiB each).
    pub order: u8,
    /// How many allocations.
    pub count: u32,
}

impl Pages {
    /// No page allocations.
    pub const NONE: Pages = Pages { order: 0, count: 0 };

    /// `count` allocations of order `order`.
    pub fn new(order: u8, count: u32) -> Pages {
        Pages { order, count }
    }

    /// Bytes one allocation covers.
    pub fn bytes_each(&self) -> i64 {
        4096i64 << self.order
    }
}

/// How one CUDA API call behaves, phase by phase.
///
/// The call runs `cpu_ns` of host work (allocating `pages` as it goes), then
/// sleeps `block_ns` in the driver, then queues `gpu_ns` of device work, then
/// (when `wait_gpu`) sleeps until the device drains, then runs `tail_cpu_ns`
/// of host work before returning. The recorded duration is whatever wall time
/// all of that took, including any time the thread spent preempted or queued
/// for a core, which is how host contention shows up inside CUDA calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaSpec {
    /// Catalogue id of the traced function.
    pub op_id: u16,
    /// Catalogue id of a driver function the runtime calls inside this one
    /// (recorded as a nested call), 0 for none.
    pub nested_op_id: u16,
    /// Bytes moved or allocated.
    pub bytes: i64,
    /// `cudaMemcpyKind`, -1 when not a copy.
    pub copy_kind: i64,
    /// Stream handle.
    pub stream: i64,
    /// Return code.
    pub ret: i64,
    /// Host work before anything else.
    pub cpu_ns: i64,
    /// Page allocations during that host work.
    pub pages: Pages,
    /// Driver sleep (lock, ioctl, device initialisation).
    pub block_ns: i64,
    /// Device work queued by the call.
    pub gpu_ns: i64,
    /// Whether the call returns only once the device has drained.
    pub wait_gpu: bool,
    /// Host work after waking, before returning.
    pub tail_cpu_ns: i64,
}

impl CudaSpec {
    /// A call to `op_id` with no cost at all; builders fill in the phases.
    pub fn new(op_id: u16) -> CudaSpec {
        CudaSpec {
            op_id,
            nested_op_id: 0,
            bytes: 0,
            copy_kind: -1,
            stream: 0,
            ret: 0,
            cpu_ns: 0,
            pages: Pages::NONE,
            block_ns: 0,
            gpu_ns: 0,
            wait_gpu: false,
            tail_cpu_ns: 0,
        }
    }
}

/// One step of a simulated thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Run on a CPU for `ns` (may be preempted), allocating `pages` on the way.
    Compute {
        /// CPU time needed.
        ns: i64,
        /// Page allocations spread over the burst.
        pages: Pages,
    },
    /// Sleep off-CPU for `ns` (I/O, timers).
    Sleep(i64),
    /// Take one token from a channel, sleeping until one is there.
    Take(ChanId),
    /// Put one token into a channel, waking the first waiter.
    Put(ChanId),
    /// Make a CUDA API call.
    Cuda(CudaSpec),
    /// Fork the process with this pid: records the fork and starts its threads.
    Fork(i32),
    /// Give `bytes` of memory back (for the memory figure in snapshots).
    Release(i64),
    /// End the thread.
    Exit,
}

/// The behaviour of one simulated thread.
///
/// The scheduler asks for more operations whenever the thread's queue runs
/// dry; a program usually appends one loop iteration's worth at a time.
pub trait Program {
    /// Appends the next operations of the thread to `out`; `now_ns` is the
    /// simulated time at which the thread asks. Appending nothing ends it.
    fn plan(&mut self, now_ns: i64, out: &mut VecDeque<Op>);
}

/// Any closure with the right shape is a program: scenario code captures its
/// own state and random source in it.
impl<F: FnMut(i64, &mut VecDeque<Op>)> Program for F {
    fn plan(&mut self, now_ns: i64, out: &mut VecDeque<Op>) {
        self(now_ns, out)
    }
}
