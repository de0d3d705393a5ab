//! What part of a trace an analysis looks at.

use ingero_store::TimeWindow;
use serde::{Deserialize, Serialize};

/// A time window (relative to the capture end) and an optional process filter.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Scope {
    /// Window relative to the end of the capture.
    pub window: TimeWindow,
    /// Only this process (and, for host causes, its relatives) when set.
    pub pid: Option<i32>,
}

impl Scope {
    /// The whole capture, every process.
    pub const ALL: Scope = Scope {
        window: TimeWindow::ALL,
        pid: None,
    };
}
