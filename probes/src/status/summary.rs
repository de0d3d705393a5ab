//! What a finished capture hands back: the final status and why it ended.

use super::CaptureStatus;
use serde::Serialize;

/// What a finished capture produced.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CaptureSummary {
    /// Final counters.
    pub status: CaptureStatus,
    /// Session id inside the database.
    pub session_id: i64,
    /// Start, epoch ns.
    pub started_ns: i64,
    /// Stop, epoch ns.
    pub stopped_ns: i64,
    /// Why the capture ended.
    pub reason: StopReason,
    /// Why, in the words recorded in the file's `sessions.stop_reason`
    /// ("SIGTERM", "duration 10 s elapsed", "writer failed: ...").
    pub stop_text: String,
    /// Whether the stop time and `stop_text` made it into the file (not
    /// when even that small update failed, on a full disk).
    pub stop_recorded: bool,
    /// Exit status of the traced command (launched captures only).
    pub command_exit: Option<i32>,
}

/// Why a capture ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `stop()` was called (or Ctrl-C).
    Requested,
    /// The configured duration elapsed.
    Duration,
    /// The traced command or process exited.
    TargetExited,
    /// The database could not be written: the capture stopped at the
    /// writer's first error, and `stopped_ns` is the last instant the file
    /// holds in full.
    WriterFailed,
}
