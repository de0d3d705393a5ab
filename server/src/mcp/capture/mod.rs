//! Live capture behind the `start_trace`, `get_trace_status` and `stop_trace`
//! tools: one capture at a time per server, driven through the capture engine
//! (`ingero-probes`) in the background, writing a new database inside the
//! allowed folder. Off unless the server runs with `--allow-capture`.

use ingero_probes::{CaptureConfig, CaptureHandle, Target};
use ingero_store::parse_duration_ns;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// What a client asks to capture.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct StartTraceArgs {
    /// Process id to trace (with every process it forks from now on); empty
    /// traces every process on the machine. At most one pid per capture.
    #[serde(default)]
    pub pids: Vec<i32>,
    /// How long to capture, e.g. "30s" or "5m"; runs until stop_trace (or the
    /// traced process exits) when absent.
    pub duration: Option<String>,
    /// File name for the new database, created inside the allowed folder
    /// (default: capture-<unix time>.db).
    pub output: Option<String>,
    /// Kernel ring buffer size, a power of two from "4K" to "1G" (default
    /// "16M"); raise it when a capture reports records dropped in the kernel.
    pub ring_size: Option<String>,
}

/// State of the capture, as reported to clients.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CaptureStatus {
    /// True while a capture is running.
    pub running: bool,
    /// Engine state: running, stopping, stopped or failed.
    pub state: String,
    /// Database being written, when running or just stopped.
    pub output: Option<String>,
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
    /// CUDA library files probed.
    pub libraries: Vec<String>,
    /// Why the capture ended, once it has.
    pub stop_reason: Option<String>,
    /// What went wrong, if anything.
    pub error: Option<String>,
}

/// Why capture cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The server was started without `--allow-capture`.
    #[error("capture is disabled on this server (start it with `ingero mcp --allow-capture`)")]
    Disabled,
    /// No capture has been started on this server.
    #[error("no capture has been started on this server (call start_trace first)")]
    NotStarted,
    /// A capture is already running.
    #[error("a capture is already running into {0}; stop it with stop_trace first")]
    Busy(String),
    /// The request was malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The engine refused or failed (permissions, kernel support, bad pid...).
    #[error("capture not available on this build/host: {0}")]
    Engine(String),
}

struct Running {
    handle: CaptureHandle,
    output: PathBuf,
}

/// The last capture and how it ended.
enum Slot {
    Empty,
    Running(Running),
    Done(CaptureStatus),
}

/// The capture controller shared by all sessions of one server.
pub struct Capture {
    allowed: bool,
    output_dir: PathBuf,
    slot: Mutex<Slot>,
}

fn engine_status(s: &ingero_probes::CaptureStatus, output: &Path) -> CaptureStatus {
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
        events: s.events,
        cuda_calls: s.cuda_calls,
        host_events: s.host_events,
        lost: s.drops,
        unfinished_calls: s.unfinished_calls,
        warnings: ingero_probes::render::warning_lines(s),
        elapsed_s: s.elapsed_ms as f64 / 1000.0,
        libraries: s.libraries.clone(),
        stop_reason: None,
        error: s.error.clone(),
    }
}

impl Capture {
    /// A controller that writes new databases into `output_dir`.
    pub fn new(allowed: bool, output_dir: PathBuf) -> Capture {
        Capture {
            allowed,
            output_dir,
            slot: Mutex::new(Slot::Empty),
        }
    }

    fn check(&self) -> Result<(), CaptureError> {
        if self.allowed {
            Ok(())
        } else {
            Err(CaptureError::Disabled)
        }
    }

    fn output_path(&self, name: Option<&str>) -> Result<PathBuf, CaptureError> {
        let name = match name {
            Some(n) => n.to_string(),
            None => format!(
                "capture-{}.db",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs())
            ),
        };
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain || !name.ends_with(".db") {
            return Err(CaptureError::BadRequest(format!(
                "output must be a plain file name ending in .db (letters, digits, '-', '_', '.'), got {name:?}"
            )));
        }
        let path = self.output_dir.join(&name);
        if path.exists() {
            return Err(CaptureError::BadRequest(format!(
                "{name} already exists in the allowed folder; choose another name"
            )));
        }
        Ok(path)
    }

    /// Starts a capture.
    pub fn start(&self, args: &StartTraceArgs) -> Result<CaptureStatus, CaptureError> {
        tracing::info!(pids = ?args.pids, duration = ?args.duration, output = ?args.output, "start_trace requested");
        self.check()?;
        let target = match args.pids.as_slice() {
            [] => Target::AllProcesses,
            [pid] if *pid > 0 => Target::Pid(*pid),
            [pid] => return Err(CaptureError::BadRequest(format!("bad pid {pid}"))),
            _ => {
                return Err(CaptureError::BadRequest(
                    "one pid per capture: its children are followed automatically".into(),
                ))
            }
        };
        let duration = args
            .duration
            .as_deref()
            .map(parse_duration_ns)
            .transpose()
            .map_err(|e| CaptureError::BadRequest(e.to_string()))?
            .map(|ns| Duration::from_nanos(ns.max(0) as u64));
        let ring_bytes = args
            .ring_size
            .as_deref()
            .map(ingero_probes::config::parse_ring_size)
            .transpose()
            .map_err(|e| CaptureError::BadRequest(format!("ring_size: {e}")))?;
        let mut slot = self
            .slot
            .lock()
            .map_err(|_| CaptureError::Engine("capture state poisoned".into()))?;
        if let Slot::Running(r) = &*slot {
            if !r.handle.is_finished() {
                return Err(CaptureError::Busy(r.output.display().to_string()));
            }
        }
        let output = self.output_path(args.output.as_deref())?;
        let mut config = CaptureConfig::new(target, output.clone());
        config.duration = duration;
        if let Some(bytes) = ring_bytes {
            config.ring_bytes = bytes;
        }
        let handle =
            ingero_probes::start(config).map_err(|e| CaptureError::Engine(e.to_string()))?;
        let status = engine_status(&handle.status(), &output);
        *slot = Slot::Running(Running { handle, output });
        Ok(status)
    }

    /// Reports the running (or last) capture.
    pub fn status(&self) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        let slot = self
            .slot
            .lock()
            .map_err(|_| CaptureError::Engine("capture state poisoned".into()))?;
        match &*slot {
            Slot::Empty => Err(CaptureError::NotStarted),
            Slot::Running(r) => Ok(engine_status(&r.handle.status(), &r.output)),
            Slot::Done(s) => Ok(s.clone()),
        }
    }

    /// Stops the running capture (or collects one that ended by itself) and
    /// returns its final state; the database is then complete.
    pub fn stop(&self) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        let mut slot = self
            .slot
            .lock()
            .map_err(|_| CaptureError::Engine("capture state poisoned".into()))?;
        match std::mem::replace(&mut *slot, Slot::Empty) {
            Slot::Empty => Err(CaptureError::NotStarted),
            Slot::Done(s) => {
                *slot = Slot::Done(s.clone());
                Ok(s)
            }
            Slot::Running(r) => {
                let result = r.handle.stop();
                let status = match result {
                    Ok(summary) => {
                        let mut s = engine_status(&summary.status, &r.output);
                        s.running = false;
                        s.stop_reason = serde_json::to_value(summary.reason)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string));
                        s
                    }
                    Err(e) => CaptureStatus {
                        running: false,
                        state: "failed".into(),
                        output: Some(r.output.display().to_string()),
                        events: 0,
                        cuda_calls: 0,
                        host_events: 0,
                        lost: 0,
                        unfinished_calls: 0,
                        warnings: Vec::new(),
                        elapsed_s: 0.0,
                        libraries: Vec::new(),
                        stop_reason: None,
                        error: Some(e.to_string()),
                    },
                };
                *slot = Slot::Done(status.clone());
                Ok(status)
            }
        }
    }
}
