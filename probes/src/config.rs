//! What to capture, where to write it.

use ingero_store::RawPolicy;
use std::path::PathBuf;
use std::time::Duration;

/// Which processes to trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A running process and every process it forks from now on.
    Pid(i32),
    /// A command ingero starts (held until the probes are in place) and its children.
    Command(Vec<String>),
    /// Every process on the machine except ingero itself.
    AllProcesses,
}

/// Everything `start` needs to know.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// Processes to follow.
    pub target: Target,
    /// Stop after this long; `None` runs until stopped (or the target exits).
    pub duration: Option<Duration>,
    /// Trace database to create or extend.
    pub db: PathBuf,
    /// Extra CUDA library files to probe besides the ones discovered.
    pub libraries: Vec<PathBuf>,
    /// Fail at start when no CUDA library is found anywhere.
    pub require_cuda_library: bool,
    /// Which raw rows to keep (aggregates always count everything).
    pub raw: RawPolicy,
    /// Ring buffer size in bytes (power of two, at least one page).
    pub ring_bytes: u32,
    /// How often the ring buffer is drained.
    pub poll_interval: Duration,
    /// How often a batch is committed to the database.
    pub batch_interval: Duration,
}

impl CaptureConfig {
    /// Defaults for everything but the target and the database path.
    pub fn new(target: Target, db: impl Into<PathBuf>) -> CaptureConfig {
        CaptureConfig {
            target,
            duration: None,
            db: db.into(),
            libraries: Vec::new(),
            require_cuda_library: false,
            raw: RawPolicy::All,
            ring_bytes: 16 << 20,
            poll_interval: Duration::from_millis(20),
            batch_interval: Duration::from_millis(200),
        }
    }
}
