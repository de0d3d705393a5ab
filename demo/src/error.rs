//! Errors of the demo generator.

use ingero_store::StoreError;
use std::path::PathBuf;

/// Everything that can stop a demo database from being written.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The scenario name is not one of [`crate::Scenario::ALL`].
    #[error("unknown scenario {name:?}; valid scenarios: {valid}")]
    UnknownScenario {
        /// What was asked for.
        name: String,
        /// The valid names, comma-separated.
        valid: String,
    },
    /// The output file exists and overwriting was not requested.
    #[error("{0}: file exists (choose another path or overwrite it with --force)")]
    Exists(PathBuf),
    /// An option is out of range.
    #[error("bad demo option: {0}")]
    BadOption(String),
    /// The trace store refused to create or write the database.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file operation around the database failed (removing a stale
    /// partial file, moving the finished file into place).
    #[error("{path}: {source}", path = .path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
}

impl DemoError {
    /// True when the caller's input is at fault (unknown scenario, existing
    /// file, bad option, unusable path) rather than the generator; the CLI
    /// maps these to its bad-input exit code.
    pub fn is_bad_input(&self) -> bool {
        match self {
            DemoError::UnknownScenario { .. } | DemoError::Exists(_) | DemoError::BadOption(_) => {
                true
            }
            DemoError::Store(e) => e.is_bad_input(),
            DemoError::Io { .. } => false,
        }
    }
}
