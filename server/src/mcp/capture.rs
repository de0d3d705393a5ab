//! Live capture behind the `start_trace`, `get_trace_status` and `stop_trace`
//! tools.
//!
//! All wiring to the capture engine lives in [`Capture`]: this build has no
//! engine, so every operation answers [`CaptureError::Unavailable`] (or
//! [`CaptureError::Disabled`] without `--allow-capture`). Connecting the
//! engine means filling in `start`, `status` and `stop` here; the tools stay
//! as they are.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What a client asks to capture.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct StartTraceArgs {
    /// Process ids to trace; empty traces every process that uses CUDA.
    #[serde(default)]
    pub pids: Vec<i32>,
    /// How long to capture, e.g. "30s" or "5m"; runs until stop_trace when absent.
    pub duration: Option<String>,
    /// File name for the new database, created inside the allowed folder.
    pub output: Option<String>,
}

/// State of the capture, as reported to clients.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureStatus {
    /// True while a capture is running.
    pub running: bool,
    /// Database being written, when running or just stopped.
    pub output: Option<String>,
    /// Events stored so far.
    pub events: u64,
    /// Events lost before they could be stored.
    pub lost: u64,
    /// Seconds since the capture started.
    pub elapsed_s: f64,
}

/// Why capture cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The server was started without `--allow-capture`.
    #[error("capture is disabled on this server (start it with `ingero mcp --allow-capture`)")]
    Disabled,
    /// No capture engine in this build, or the host cannot trace.
    #[error("capture not available on this build/host: analyse a recorded database instead (list_databases, open_database)")]
    Unavailable,
}

/// The capture controller shared by all sessions of one server.
pub struct Capture {
    allowed: bool,
    output_dir: PathBuf,
}

impl Capture {
    /// A controller that writes new databases into `output_dir`.
    pub fn new(allowed: bool, output_dir: PathBuf) -> Capture {
        Capture {
            allowed,
            output_dir,
        }
    }

    fn check(&self) -> Result<(), CaptureError> {
        if !self.allowed {
            return Err(CaptureError::Disabled);
        }
        let _ = &self.output_dir;
        Err(CaptureError::Unavailable)
    }

    /// Starts a capture.
    pub fn start(&self, args: &StartTraceArgs) -> Result<CaptureStatus, CaptureError> {
        tracing::info!(pids = ?args.pids, duration = ?args.duration, output = ?args.output, "start_trace requested");
        self.check()?;
        Err(CaptureError::Unavailable)
    }

    /// Reports the running (or last) capture.
    pub fn status(&self) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        Err(CaptureError::Unavailable)
    }

    /// Stops the running capture and returns its final state.
    pub fn stop(&self) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        Err(CaptureError::Unavailable)
    }
}
