//! Errors raised by the analysis engine.

use ingero_store::{StoreError, TraceDb};

/// Why an analysis could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The database could not be opened or read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An argument was out of range or named something that does not exist.
    #[error("{0}")]
    BadArgument(String),
    /// A query failed while reading the trace.
    #[error("reading the trace failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

impl ToolError {
    /// True when the caller's input (database file or argument) is at fault.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ToolError::Store(e) => e.is_bad_input(),
            ToolError::BadArgument(_) => true,
            ToolError::Sqlite(e) => matches!(
                e.sqlite_error_code(),
                Some(rusqlite::ErrorCode::DatabaseCorrupt)
                    | Some(rusqlite::ErrorCode::NotADatabase)
            ),
        }
    }
}

impl ToolError {
    /// This error, with a read of `db` that stopped on a value of the wrong
    /// type or range replaced by the error naming the damaged rows
    /// ([`TraceDb::classify`]); any other error is returned unchanged.
    pub fn diagnosed(self, db: &TraceDb) -> ToolError {
        match self {
            ToolError::Sqlite(e) | ToolError::Store(StoreError::Sqlite(e))
                if ingero_store::integrity::is_value_error(&e) =>
            {
                ToolError::Store(db.classify(e))
            }
            other => other,
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = ToolError> = std::result::Result<T, E>;
