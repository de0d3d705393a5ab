//! Analyses of a trace database.
//!
//! The analysis modules below are placeholders with the public names the
//! server is written against; every analysis returns
//! [`ToolError::NotBuilt`] until the real engine replaces them. `sql` and
//! `library` are complete.

pub mod library;
pub mod sql;

use ingero_store::{StoreError, TimeWindow, TraceDb};
use serde::Serialize;

/// Why an analysis failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The trace store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// This build has no analysis engine.
    #[error("analysis is not part of this build")]
    NotBuilt,
}

impl ToolError {
    /// True when the caller's input caused the failure.
    pub fn is_bad_input(&self) -> bool {
        match self {
            ToolError::Store(e) => e.is_bad_input(),
            ToolError::NotBuilt => false,
        }
    }
}

/// Which part of a capture an analysis looks at.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope {
    /// Time window relative to the capture end.
    pub window: TimeWindow,
    /// Only this process, when set.
    pub pid: Option<i32>,
}

macro_rules! placeholder_report {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
        pub struct $name {
            /// Placeholder field.
            pub placeholder: bool,
        }
    };
}

/// Per-op statistics.
pub mod stats {
    use super::*;
    placeholder_report!(
        /// Statistics per CUDA op.
        OpStatsReport
    );
    /// Computes op statistics.
    pub fn op_stats(_db: &TraceDb, _scope: &Scope) -> Result<OpStatsReport, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Per-process breakdown.
pub mod processes {
    use super::*;
    placeholder_report!(
        /// Time and calls per process.
        ProcessBreakdown
    );
    /// Computes the breakdown.
    pub fn per_process(_db: &TraceDb, _scope: &Scope) -> Result<ProcessBreakdown, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Bucketed timeline.
pub mod timeline {
    use super::*;
    placeholder_report!(
        /// Activity per time bucket.
        Timeline
    );
    /// Computes the timeline.
    pub fn timeline(
        _db: &TraceDb,
        _scope: &Scope,
        _bucket_ns: Option<i64>,
    ) -> Result<Timeline, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Causal chains.
pub mod chains {
    use super::*;
    placeholder_report!(
        /// Chains from host cause to GPU symptom.
        ChainReport
    );
    /// Finds causal chains.
    pub fn causal_chains(_db: &TraceDb, _scope: &Scope) -> Result<ChainReport, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Raw events, filtered and paged.
pub mod events {
    use super::*;
    /// What to list.
    #[derive(Debug, Clone, Default)]
    pub struct EventQuery {
        /// Window and process.
        pub scope: Scope,
        /// Only this op or host event kind.
        pub op: Option<String>,
        /// Page size.
        pub limit: usize,
        /// Rows to skip.
        pub offset: usize,
    }
    placeholder_report!(
        /// One page of events.
        EventPage
    );
    /// Lists events.
    pub fn query_events(_db: &TraceDb, _q: &EventQuery) -> Result<EventPage, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Everything at once.
pub mod explain {
    use super::*;
    placeholder_report!(
        /// The full report.
        Report
    );
    /// Builds the full report.
    pub fn explain(_db: &TraceDb, _scope: &Scope) -> Result<Report, ToolError> {
        Err(ToolError::NotBuilt)
    }
}

/// Text rendering.
pub mod render {
    /// Renders the full report as text.
    pub fn report_text(_report: &super::explain::Report) -> String {
        String::new()
    }
}
