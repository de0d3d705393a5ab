//! A capture as `start_trace`, `get_trace_status` and `stop_trace` report
//! it: the engine's counters, what is traced, the operator's limits and,
//! once it has ended, why.

use super::limits::LimitsView;
use schemars::JsonSchema;
use serde::Serialize;
use std::path::Path;

/// State of one capture, as reported to clients.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureStatus {
    /// True while a capture is running.
    pub running: bool,
    /// Engine state: running, stopping, stopped or failed.
    pub state: String,
    /// Database being written, when running or just stopped.
    pub output: Option<String>,
    /// What is traced: a pid and its children, or every process.
    pub target: String,
    /// Events received from the kernel so far.
    pub events: u64,
    /// Of which CUDA calls.
    pub cuda_calls: u64,
    /// Of which host events.
    pub host_events: u64,
    /// Events lost before they could be stored.
    pub lost: u64,
    /// CUDA calls recorded without a return (thread exited inside the call,
    /// or still running at the stop).
    pub unfinished_calls: u64,
    /// One sentence per warning: CUDA libraries that could not be probed and
    /// fallbacks to one uprobe link per function, in the order they
    /// happened, then each cause of loss with what to do about it.
    pub warnings: Vec<String>,
    /// Seconds since the capture started.
    pub elapsed_s: f64,
    /// Size of the database so far (with its write-ahead log), bytes.
    pub database_bytes: u64,
    /// CUDA library files probed.
    pub libraries: Vec<String>,
    /// Which launch levels are probed, once the runtime level has gone (how
    /// to read cudaLaunchKernel's count) or stays for good.
    pub launch_levels: Option<String>,
    /// Why the capture ended, once it has: requested (stop_trace, the
    /// client's disconnect, the server's shutdown), duration (the duration
    /// asked for), target_exited, writer_failed (the database could not be
    /// written; the capture stopped at once), max_duration or max_bytes (an
    /// operator limit, see limit_reached). `stopped` says it in full.
    pub stop_reason: Option<String>,
    /// When and why it ended, as its file records it: "stopped at +1.2 s:
    /// writer failed: database or disk is full", "stopped at +30.0 s:
    /// stop_trace requested".
    pub stopped: Option<String>,
    /// The operator limit that ended the capture, in a sentence; the
    /// database holds everything recorded up to then.
    pub limit_reached: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
    /// The operator's limits on captures.
    pub limits: LimitsView,
    /// Every capture this server knows, newest last (name, running).
    pub captures: Vec<CaptureBrief>,
}

/// One capture in the list of a status.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureBrief {
    /// Its database file name (what get_trace_status and stop_trace take
    /// as `output`).
    pub output: String,
    /// True while it runs.
    pub running: bool,
}

/// What the engine's status says, before the controller adds its part.
pub fn from_engine(
    s: &ingero_probes::CaptureStatus,
    output: &Path,
    limits: LimitsView,
) -> CaptureStatus {
    let state = serde_json::to_value(s.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{:?}", s.state).to_lowercase());
    CaptureStatus {
        running: matches!(
            s.state,
            ingero_probes::CaptureState::Running | ingero_probes::CaptureState::Stopping
        ),
        state,
        output: Some(output.display().to_string()),
        target: String::new(),
        events: s.events,
        cuda_calls: s.cuda_calls,
        host_events: s.host_events,
        lost: s.drops,
        unfinished_calls: s.unfinished_calls,
        warnings: ingero_probes::render::warning_lines(s),
        elapsed_s: s.elapsed_ms as f64 / 1000.0,
        database_bytes: database_bytes(output),
        libraries: s.libraries.clone(),
        launch_levels: ingero_probes::render::launch_levels_line(s),
        stop_reason: None,
        stopped: None,
        limit_reached: None,
        error: s.error.clone(),
        limits,
        captures: Vec::new(),
    }
}

/// A capture whose engine failed at the stop.
pub fn failed(output: &Path, error: String, limits: LimitsView) -> CaptureStatus {
    CaptureStatus {
        running: false,
        state: "failed".into(),
        output: Some(output.display().to_string()),
        target: String::new(),
        events: 0,
        cuda_calls: 0,
        host_events: 0,
        lost: 0,
        unfinished_calls: 0,
        warnings: Vec::new(),
        elapsed_s: 0.0,
        database_bytes: database_bytes(output),
        libraries: Vec::new(),
        launch_levels: None,
        stop_reason: None,
        stopped: None,
        limit_reached: None,
        error: Some(error),
        limits,
        captures: Vec::new(),
    }
}

/// "stopped at +1.2 s: REASON", from the engine's summary.
pub fn stopped_sentence(s: &ingero_probes::CaptureSummary) -> String {
    let at = (s.stopped_ns - s.started_ns).max(0) as f64 / 1e9;
    let mut line = format!("stopped at +{at:.1} s: {}", s.stop_text);
    if !s.stop_recorded {
        line.push_str(" (not recorded in the file: even that write failed)");
    }
    line
}

/// The database and its write-ahead log together, bytes (0 while absent).
pub fn database_bytes(db: &Path) -> u64 {
    let len = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    len(db) + len(&ingero_store::wal_file(db))
}
