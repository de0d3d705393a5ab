//! Placeholder for the demo generator: same public names as the real crate,
//! so the server compiles until the generator is written. `generate` always
//! fails with [`DemoError::NotBuilt`].

use std::path::Path;

/// Built-in scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// A training loop whose GPU waits on a slow, single-process data loader.
    DataloaderStarvation,
}

/// Generation options.
#[derive(Debug, Clone, Default)]
pub struct DemoOptions {}

/// Why a demo database could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// This build has no generator.
    #[error("the demo generator is not part of this build")]
    NotBuilt,
}

/// Writes the scenario's database to `path`.
pub fn generate(
    _scenario: Scenario,
    _path: &Path,
    _options: &DemoOptions,
) -> Result<(), DemoError> {
    Err(DemoError::NotBuilt)
}
