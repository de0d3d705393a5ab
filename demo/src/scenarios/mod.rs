//! One module per scenario; each builds a ready-to-run simulation of the
//! mechanism behind one cause of GPU starvation.

pub(crate) mod cold_start;
pub(crate) mod contention;
pub(crate) mod dataloader;
pub(crate) mod malloc_spike;
pub(crate) mod pageable;

use crate::scenario::Scenario;
use crate::sim::Sim;
use ingero_store::{ProcessInfo, SessionInfo};

/// A simulation set up for one scenario, with the rows that describe it.
pub(crate) struct Built {
    /// The simulated host, threads already spawned.
    pub sim: Sim,
    /// Session row (stop time is set when writing finishes).
    pub session: SessionInfo,
    /// Processes taking part; first/last seen are filled in after the run.
    pub processes: Vec<ProcessInfo>,
    /// Simulated time at which the capture stops.
    pub end_ns: i64,
}

/// Sets up `scenario` for `duration_s` seconds of simulated time.
pub(crate) fn build(scenario: Scenario, seed: u64, duration_s: u32) -> Built {
    match scenario {
        Scenario::DataloaderStarvation => dataloader::build(seed, duration_s),
        Scenario::CpuContention => contention::build(seed, duration_s),
        Scenario::PageableMemcpy => pageable::build(seed, duration_s),
        Scenario::PeriodicMallocSpike => malloc_spike::build(seed, duration_s),
        Scenario::ColdStart => cold_start::build(seed, duration_s),
    }
}
