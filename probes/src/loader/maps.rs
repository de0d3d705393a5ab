//! The maps user space takes out of the loaded object to own: the ring
//! buffer, the pid filter, the loss and launch counters, and the tables
//! read at the stop.

use super::{load_err, Probes};
use crate::error::CaptureError;
use crate::launch_level::LaunchLevels;
use crate::open_calls::OpenCalls;
use crate::page_runs::OpenPageRuns;
use crate::per_cpu::per_cpu_total;
use crate::records::{LOSS_CALL_MAP, LOSS_RINGBUF, LOSS_UNFINISHED};
use aya::maps::{HashMap as BpfHashMap, Map, MapData, PerCpuArray, RingBuf};

impl Probes {
    /// Takes the ring buffer (the poller thread owns it from then on).
    pub fn take_ring(&mut self) -> Result<RingBuf<MapData>, CaptureError> {
        let map = self.take_map("events")?;
        RingBuf::try_from(map).map_err(load_err)
    }

    /// Takes the map `name` out of the loaded object, for user space to own.
    fn take_map(&mut self, name: &str) -> Result<Map, CaptureError> {
        self.ebpf
            .take_map(name)
            .ok_or_else(|| load_err(format!("no {name} map")))
    }

    /// Takes the table of traced processes, for seeding targets.
    pub fn take_tracked(&mut self) -> Result<TrackedMap, CaptureError> {
        let map = self.take_map("tracked")?;
        Ok(TrackedMap {
            map: BpfHashMap::try_from(map).map_err(load_err)?,
        })
    }

    /// Takes the table of calls in flight (read at stop for calls that are
    /// still open).
    pub fn take_open_calls(&mut self) -> Result<OpenCalls, CaptureError> {
        let map = self.take_map("threads")?;
        OpenCalls::new(map).map_err(load_err)
    }

    /// Takes the per-CPU page-allocation runs (read at stop for runs that
    /// have not been sent).
    pub fn take_page_runs(&mut self) -> Result<OpenPageRuns, CaptureError> {
        let map = self.take_map("page_runs")?;
        OpenPageRuns::new(map).map_err(load_err)
    }

    /// Takes the per-CPU loss counters.
    pub fn take_losses(&mut self) -> Result<LossCounters, CaptureError> {
        let map = self.take_map("losses")?;
        Ok(LossCounters {
            map: PerCpuArray::try_from(map).map_err(load_err)?,
        })
    }

    /// Takes the kernel's launch counters by level.
    pub fn take_launch_levels(&mut self) -> Result<LaunchLevels, CaptureError> {
        let map = self.take_map("launch_levels")?;
        Ok(LaunchLevels::new(
            PerCpuArray::try_from(map).map_err(load_err)?,
        ))
    }
}

/// The kernel's set of traced process ids.
pub struct TrackedMap {
    map: BpfHashMap<MapData, u32, u32>,
}

impl TrackedMap {
    /// Starts tracing `pid` (and, through fork, its future children).
    pub fn insert(&mut self, pid: i32) -> Result<(), CaptureError> {
        self.map
            .insert(pid as u32, 1, 0)
            .map_err(|e| load_err(format!("cannot track pid {pid}: {e}")))
    }

    /// Number of processes currently traced.
    pub fn len(&self) -> usize {
        self.map.keys().filter(|k| k.is_ok()).count()
    }

    /// True when no process is traced.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Kernel-side drop counters (slots as in `bpf/ingero_events.h`).
pub struct LossCounters {
    map: PerCpuArray<MapData, u64>,
}

/// Totals of the loss counters, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Records dropped because the ring buffer was full.
    pub ring_full: u64,
    /// Calls not timed because the in-flight table was full.
    pub call_table_full: u64,
    /// Calls whose thread exited inside them (recorded, never returned).
    pub unfinished: u64,
}

impl LossCounters {
    /// Reads the current totals.
    pub fn read(&self) -> Losses {
        let sum = |slot: u32| per_cpu_total(&self.map, slot);
        Losses {
            ring_full: sum(LOSS_RINGBUF),
            call_table_full: sum(LOSS_CALL_MAP),
            unfinished: sum(LOSS_UNFINISHED),
        }
    }
}
