//! Deterministic synthetic trace databases for known causes of GPU starvation.
//!
//! Each [`Scenario`] is a small discrete-event simulation of a host (cores, a
//! round-robin run queue, threads that compute, sleep, pass batches and call
//! CUDA) and of a GPU (an in-order work queue). The recorded scheduler
//! switches, page allocations, forks, CUDA call durations and CPU figures
//! come out of that simulation, so the databases show the mechanism behind
//! each cause rather than pasted numbers, and the analysis engine can be
//! tried, tested and demonstrated without a GPU or root.
//!
//! The same scenario, seed and duration always produce the same rows.

#![warn(missing_docs)]

mod cuda;
mod error;
mod gpu;
mod host;
mod large;
mod nvml;
mod output;
mod rng;
mod scenario;
mod scenarios;
mod sim;

pub use error::DemoError;
pub use host::EPOCH_NS;
pub use large::generate_large;
pub use output::DemoSummary;
pub use scenario::Scenario;

use std::path::Path;

/// Seed used when none is given.
pub const DEFAULT_SEED: u64 = 20_260_101;

/// Longest simulated capture a demo may ask for, seconds.
pub const MAX_DURATION_S: u32 = 3_600;

/// How to generate a demo database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoOptions {
    /// Seed of the simulation's random source.
    pub seed: u64,
    /// Simulated seconds; `None` uses [`Scenario::default_duration_s`].
    pub duration_s: Option<u32>,
    /// Replace the output file if it exists.
    pub overwrite: bool,
}

impl Default for DemoOptions {
    fn default() -> DemoOptions {
        DemoOptions {
            seed: DEFAULT_SEED,
            duration_s: None,
            overwrite: false,
        }
    }
}

/// Simulates `scenario` and writes it as a trace database at `path`.
///
/// Refuses to replace an existing file unless `opts.overwrite` is set.
pub fn generate(
    scenario: Scenario,
    path: &Path,
    opts: &DemoOptions,
) -> Result<DemoSummary, DemoError> {
    let duration_s = opts
        .duration_s
        .unwrap_or_else(|| scenario.default_duration_s());
    if duration_s == 0 || duration_s > MAX_DURATION_S {
        return Err(DemoError::BadOption(format!(
            "duration must be between 1 and {MAX_DURATION_S} seconds, got {duration_s}"
        )));
    }
    output::check_target(path, opts.overwrite)?;
    let built = scenarios::build(scenario, opts.seed, duration_s);
    output::write(built, scenario.name(), path, output::Stop::AtEnd)
}
