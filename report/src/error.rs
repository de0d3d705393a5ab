//! Errors raised while building or delivering a report or an export.

use ingero_tools::ToolError;

/// Why a report or an export could not be produced or delivered.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The trace could not be read or analysed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// An argument (endpoint, window, size) was unusable.
    #[error("{0}")]
    BadArgument(String),
    /// Serialising the embedded data failed.
    #[error("encoding JSON failed: {0}")]
    Json(#[from] serde_json::Error),
    /// An OTLP body could not be written as protobuf (a field the encoder
    /// lacks: a bug here, not the caller's input).
    #[error("encoding OTLP protobuf failed: {0}")]
    Protobuf(String),
    /// The OTLP receiver could not be reached or did not answer.
    #[error("sending to {url} failed: {message}")]
    Network {
        /// Where the request went.
        url: String,
        /// What went wrong on the way.
        message: String,
    },
    /// The OTLP receiver answered with a non-success status.
    #[error("{url} rejected the export with HTTP {status}: {body}")]
    Rejected {
        /// Where the request went.
        url: String,
        /// HTTP status code received.
        status: u16,
        /// Start of the response body, for the operator.
        body: String,
    },
}

impl ReportError {
    /// True when the caller's input (database, argument) is at fault rather
    /// than the network or the program.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ReportError::Tool(e) => e.is_bad_input(),
            ReportError::BadArgument(_) => true,
            ReportError::Json(_)
            | ReportError::Protobuf(_)
            | ReportError::Network { .. }
            | ReportError::Rejected { .. } => false,
        }
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;
