//! Page allocations still being counted when a capture stops. The kernel
//! side (`bpf/page_runs.h`) coalesces each thread's consecutive page
//! allocations on a CPU into one run and sends the run when it ends; the
//! runs that have not ended when the probes are detached sit in the per-CPU
//! `page_runs` map. Reading them at the stop keeps every counted allocation
//! in the store.

use crate::clock::Clock;
use aya::maps::{Map, MapData, MapError, PerCpuArray};
use ingero_store::{HostEvent, HostKind};

// The layout lives with the other kernel layouts in `records`; it stays
// reachable here, where the table is read.
pub use crate::records::PageRun;

impl PageRun {
    /// The run as a host row, stamped at its first allocation; `cpu` is
    /// where it was counted.
    pub fn to_event(&self, clock: &Clock, cpu: i32) -> HostEvent {
        HostEvent {
            ts_ns: clock.to_epoch(self.start),
            pid: self.pid as i32,
            tid: self.tid as i32,
            kind: HostKind::PageAlloc,
            dur_ns: self.last.saturating_sub(self.start) as i64,
            arg: i64::from(self.order),
            cpu,
            count: i64::from(self.count),
            bytes: i64::from(self.pages) * 4096,
        }
    }
}

/// The kernel's per-CPU open runs.
pub struct OpenPageRuns {
    map: PerCpuArray<MapData, PageRun>,
}

impl OpenPageRuns {
    /// Wraps the `page_runs` map taken from the loaded object.
    pub fn new(map: Map) -> Result<OpenPageRuns, MapError> {
        Ok(OpenPageRuns {
            map: PerCpuArray::try_from(map)?,
        })
    }

    /// The runs not yet sent, one row each. Call after the probes are
    /// detached, so no CPU is still adding to them (a paused capture's open
    /// run keeps counting its thread's allocations until the thread leaves
    /// the CPU).
    pub fn left_open(&self, clock: &Clock) -> Vec<HostEvent> {
        let Ok(per_cpu) = self.map.get(&0, 0) else {
            return Vec::new();
        };
        per_cpu
            .iter()
            .enumerate()
            .filter(|(_, run)| run.count > 0)
            .map(|(cpu, run)| run.to_event(clock, cpu as i32))
            .collect()
    }
}
