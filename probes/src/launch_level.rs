//! One probed level per kernel launch.
//!
//! The CUDA runtime's launch (`cudaLaunchKernel` and its variants) makes
//! the driver's (`cuLaunchKernel`), so a launch through the runtime passes
//! two probed functions, and each costs a trap on entry and one on return.
//! The driver probe alone sees every launch, those the runtime makes and
//! those a JIT makes directly (Triton), with the grid and block sizes. The
//! kernel side counts, per CPU, runtime launches entered and driver
//! launches entered inside another probed call; once the capture has seen
//! enough runtime launches and every one of them reached a driver launch,
//! the runtime launch probes are detached: first their entry side, then,
//! once no runtime launch is in flight, their return side (a call entered
//! before the entry side went still returns through it).

use crate::per_cpu::per_cpu_total;
use aya::maps::{MapData, PerCpuArray};

/// Catalogue ids of the runtime launch functions (store/src/catalog.rs).
pub const RUNTIME_LAUNCH_OPS: [u32; 6] = [3, 15, 16, 17, 18, 19];

/// Catalogue ids of the driver launch functions (store/src/catalog.rs),
/// which `bpf/cuda.h` `is_driver_launch` names too.
pub const DRIVER_LAUNCH_OPS: [u32; 6] = [101, 113, 114, 115, 116, 117];

/// Runtime launches to see before deciding.
pub const MIN_RUNTIME_LAUNCHES: u64 = 1_000;

/// The kernel's launch counters (`launch_levels` in `bpf/cuda.h`).
pub struct LaunchLevels {
    map: PerCpuArray<MapData, u64>,
}

/// Launches counted so far, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LaunchCounts {
    /// Runtime launches entered.
    pub runtime: u64,
    /// Driver launches entered inside another probed call.
    pub nested_driver: u64,
}

impl LaunchCounts {
    /// True when the runtime level adds nothing the driver level does not
    /// see: enough runtime launches, and (within 1%, for launches counted
    /// on another CPU between the two reads) each reached a driver launch.
    pub fn runtime_level_redundant(&self) -> bool {
        self.runtime >= MIN_RUNTIME_LAUNCHES && self.nested_driver * 100 >= self.runtime * 99
    }

    /// The launches counted after `base` was read: a decision about runtime
    /// launch probes attached later (a process that loaded the runtime after
    /// the first decision) rests on their own launches only.
    pub fn since(&self, base: LaunchCounts) -> LaunchCounts {
        LaunchCounts {
            runtime: self.runtime.saturating_sub(base.runtime),
            nested_driver: self.nested_driver.saturating_sub(base.nested_driver),
        }
    }
}

impl LaunchLevels {
    /// Wraps the map taken from the loaded object.
    pub fn new(map: PerCpuArray<MapData, u64>) -> LaunchLevels {
        LaunchLevels { map }
    }

    /// Reads the current totals.
    pub fn read(&self) -> LaunchCounts {
        LaunchCounts {
            runtime: per_cpu_total(&self.map, 0),
            nested_driver: per_cpu_total(&self.map, 1),
        }
    }
}

/// Where the capture stands with the runtime launch probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchLevelState {
    /// Both levels probed (or no runtime launch probed yet); counting the
    /// launches after `base`.
    Both {
        /// The counters when this round of counting began.
        base: LaunchCounts,
    },
    /// Entry side detached; waiting for calls in flight to return.
    Draining {
        /// When the entry side went.
        since: std::time::Instant,
        /// The same instant, epoch ns (recorded in the database).
        since_ns: i64,
    },
    /// Only the driver level is probed (until a process maps the runtime
    /// and gets runtime launch probes of its own: then counting again).
    DriverOnly,
    /// Both levels stay probed (`--all-launch-levels`, or a runtime launch
    /// still in flight when the drain limit passed).
    Kept,
}

pub use crate::status::LaunchLevelStatus;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runtime_level_goes_only_when_every_runtime_launch_reached_the_driver() {
        let c = |runtime, nested_driver| LaunchCounts {
            runtime,
            nested_driver,
        };
        assert!(!c(999, 999).runtime_level_redundant(), "too few to tell");
        assert!(c(1_000, 1_000).runtime_level_redundant());
        assert!(c(100_000, 99_500).runtime_level_redundant());
        assert!(!c(100_000, 90_000).runtime_level_redundant());
        assert!(
            !c(5_000, 0).runtime_level_redundant(),
            "a runtime that does not reach cuLaunchKernel"
        );
        // Counting again after a first decision: only the new launches count.
        assert!(!c(3_000, 2_000)
            .since(c(2_000, 2_000))
            .runtime_level_redundant());
        assert!(c(3_500, 3_500)
            .since(c(2_000, 2_000))
            .runtime_level_redundant());
        assert!(!c(2_500, 2_500)
            .since(c(2_000, 2_000))
            .runtime_level_redundant());
    }
}
