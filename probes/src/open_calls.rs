//! Calls still in flight when a capture stops. The entry probe keeps one row
//! per thread and function until the return probe fires; whatever is left
//! once the probes are detached never returned inside the capture. A thread
//! stuck in `cudaStreamSynchronize` is exactly what a user wants to see, so
//! these calls are recorded (ret [`unfinished::OPEN_AT_STOP`], duration up to
//! the stop) instead of vanishing.

use crate::clock::Clock;
use aya::maps::{HashMap as BpfHashMap, Map, MapData, MapError};
use ingero_store::catalog::unfinished;
use ingero_store::CudaCall;

/// Key of the kernel `calls` table (`struct call_key` in `bpf/cuda.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct CallKey {
    /// Thread id.
    pub tid: u32,
    /// Catalogue id of the function.
    pub op: u32,
}

/// Value of the kernel `calls` table (`struct call_val` in `bpf/cuda.h`).
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
    /// Padding to the C layout.
    pub pad: u32,
}

// SAFETY: both are plain `repr(C)` integers with the kernel's layout and no
// invalid bit patterns.
unsafe impl aya::Pod for CallKey {}
// SAFETY: as above.
unsafe impl aya::Pod for CallVal {}

/// The kernel table of calls in flight.
pub struct OpenCalls {
    map: BpfHashMap<MapData, CallKey, CallVal>,
}

impl OpenCalls {
    /// Wraps the `calls` map taken from the loaded object.
    pub fn new(map: Map) -> Result<OpenCalls, MapError> {
        Ok(OpenCalls {
            map: BpfHashMap::try_from(map)?,
        })
    }

    /// True while some thread is inside one of the functions `ops`
    /// (catalogue ids) as far as the table knows.
    pub fn any_open(&self, ops: &[u32]) -> bool {
        self.map
            .keys()
            .filter_map(Result::ok)
            .any(|k| ops.contains(&k.op))
    }

    /// The calls left in the table, as store rows ending at `stopped_ns`
    /// (epoch ns), oldest first. Call once, after the probes are detached.
    pub fn left_open(&self, clock: &Clock, stopped_ns: i64) -> Vec<CudaCall> {
        let mut calls: Vec<CudaCall> = self
            .map
            .iter()
            .filter_map(Result::ok)
            .map(|(k, v)| {
                let ts_ns = clock.to_epoch(v.ts);
                CudaCall {
                    ts_ns,
                    pid: v.pid as i32,
                    tid: k.tid as i32,
                    op_id: k.op as u16,
                    dur_ns: stopped_ns.saturating_sub(ts_ns).max(0),
                    bytes: v.size as i64,
                    copy_kind: v.kind,
                    stream: v.stream as i64,
                    ret: unfinished::OPEN_AT_STOP,
                    grid: v.grid,
                    block: v.block,
                    shared_mem: v.shared_mem,
                    nested: v.flags & crate::decode::REC_CUDA_NESTED != 0,
                }
            })
            .collect();
        calls.sort_by_key(|c| c.ts_ns);
        calls
    }
}
