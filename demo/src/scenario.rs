//! The catalogue of demo scenarios: names, descriptions and the cause the
//! analysis engine is expected to rank first on each.

use crate::error::DemoError;
use std::fmt;
use std::str::FromStr;

/// A known cause of GPU starvation, reproduced by a simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scenario {
    /// CPU-bound DataLoader workers starve and crowd out the training thread.
    DataloaderStarvation,
    /// Unrelated CPU hogs saturate the cores the training thread needs.
    CpuContention,
    /// Large host-to-device copies from pageable memory block the host.
    PageableMemcpy,
    /// The caching allocator misses periodically: slow `cudaMalloc` and syncs.
    PeriodicMallocSpike,
    /// Context creation and lazy module loading make the first calls slow.
    ColdStart,
}

impl Scenario {
    /// Every scenario, in the order `--list` shows them.
    pub const ALL: [Scenario; 5] = [
        Scenario::DataloaderStarvation,
        Scenario::CpuContention,
        Scenario::PageableMemcpy,
        Scenario::PeriodicMallocSpike,
        Scenario::ColdStart,
    ];

    /// The scenario `ingero demo` writes when none is named.
    pub const DEFAULT: Scenario = Scenario::DataloaderStarvation;

    /// Command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::DataloaderStarvation => "dataloader-starvation",
            Scenario::CpuContention => "cpu-contention",
            Scenario::PageableMemcpy => "pageable-memcpy",
            Scenario::PeriodicMallocSpike => "periodic-malloc-spike",
            Scenario::ColdStart => "cold-start",
        }
    }

    /// Looks a scenario up by its command-line name (case-insensitive,
    /// underscores accepted for dashes).
    pub fn parse(name: &str) -> Result<Scenario, DemoError> {
        let wanted = name.trim().to_ascii_lowercase().replace('_', "-");
        Scenario::ALL
            .into_iter()
            .find(|s| s.name() == wanted)
            .ok_or_else(|| DemoError::UnknownScenario {
                name: name.to_string(),
                valid: Scenario::ALL.map(Scenario::name).join(", "),
            })
    }

    /// One sentence on what the simulated workload does.
    pub fn description(self) -> &'static str {
        match self {
            Scenario::DataloaderStarvation => {
                "4 CPU-bound DataLoader workers on 4 cores: the training thread waits for batches \
                 and queues for a core behind its own workers"
            }
            Scenario::CpuContention => {
                "a training process shares 4 cores with stress-ng and ffmpeg: launches and syncs \
                 stretch while the training thread waits in the run queue"
            }
            Scenario::PageableMemcpy => {
                "64-256 MiB batches uploaded with cudaMemcpyAsync from pageable memory: each copy \
                 blocks the host at a few GB/s"
            }
            Scenario::PeriodicMallocSpike => {
                "the caching allocator misses every 160 steps: slow cudaMalloc, a device-wide \
                 sync and cached segments freed, at a regular period"
            }
            Scenario::ColdStart => {
                "context creation and lazy module loading make the first cudaMalloc and first \
                 launches orders of magnitude slower than the steady loop"
            }
        }
    }

    /// Cause id the analysis engine should rank first on this scenario.
    pub fn expected_cause(self) -> &'static str {
        match self {
            Scenario::DataloaderStarvation => "dataloader_worker_contention",
            Scenario::CpuContention => "cpu_contention",
            Scenario::PageableMemcpy => "pageable_memcpy",
            Scenario::PeriodicMallocSpike => "allocation_spike",
            Scenario::ColdStart => "cold_start",
        }
    }

    /// Simulated seconds written when no duration is given.
    pub fn default_duration_s(self) -> u32 {
        match self {
            Scenario::DataloaderStarvation => 30,
            Scenario::CpuContention => 30,
            Scenario::PageableMemcpy => 30,
            Scenario::PeriodicMallocSpike => 60,
            Scenario::ColdStart => 20,
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scenario {
    type Err = DemoError;

    fn from_str(s: &str) -> Result<Scenario, DemoError> {
        Scenario::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()).unwrap(), s);
        }
        assert_eq!(Scenario::parse("Cold_Start").unwrap(), Scenario::ColdStart);
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let err = Scenario::parse("gpu-on-fire").unwrap_err();
        assert!(err.is_bad_input());
        let msg = err.to_string();
        for s in Scenario::ALL {
            assert!(msg.contains(s.name()), "{msg}");
        }
    }
}
