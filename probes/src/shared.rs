//! The state a capture's handle and its threads share: the life-cycle
//! state, the live counters and what the samplers report. It sits below
//! both the handle (`capture`) and the control thread (`control`), which
//! both read the status view from it.

use crate::nvml::TracedPids;
use crate::status::{
    CaptureState, CaptureStatus, GpuSamplerStatus, LaunchLevelStatus, LiveStats, LossBreakdown,
    StackStatus,
};
use crate::stop::{StopRequest, WriterFailure};
use crate::warnings::Warnings;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// State shared between the handle and the capture threads.
pub struct Shared {
    /// When the capture started.
    pub started: Instant,
    /// Life-cycle state.
    pub state: Mutex<CaptureState>,
    /// Live counters.
    pub stats: Arc<Mutex<LiveStats>>,
    /// Events committed by the writer.
    pub written: Arc<AtomicU64>,
    /// Library files probed.
    pub libraries: Mutex<Vec<String>>,
    /// Database path.
    pub db: PathBuf,
    /// Error that ended the capture.
    pub error: Mutex<Option<String>>,
    /// Set to ask the capture to stop, with the reason.
    pub stop: StopRequest,
    /// The writer's first storage error: the capture stops at once.
    pub writer_failure: Arc<WriterFailure>,
    /// Libraries not probed, fallbacks: shown in the status and summary.
    pub warnings: Arc<Warnings>,
    /// The GPU sampler's counters and cost.
    pub gpu: Arc<Mutex<GpuSamplerStatus>>,
    /// Processes of the capture (whose GPU samples are kept).
    pub traced: Arc<TracedPids>,
    /// The stack samplers' counters.
    pub stacks: Arc<Mutex<StackStatus>>,
    /// Which launch levels are probed.
    pub launch_levels: Mutex<LaunchLevelStatus>,
}

impl Shared {
    /// Builds the status view (what `CaptureHandle::status` returns and the
    /// summary ends with).
    pub fn status(&self) -> CaptureStatus {
        let state = self
            .state
            .lock()
            .map(|s| *s)
            .unwrap_or(CaptureState::Failed);
        let (ops, host, cuda, hosts, losses, unfinished_calls, processes) = match self.stats.lock()
        {
            Ok(s) => (
                s.ops(),
                s.host(),
                s.cuda,
                s.hosts,
                s.losses,
                s.unfinished,
                s.processes,
            ),
            Err(_) => (Vec::new(), Vec::new(), 0, 0, LossBreakdown::default(), 0, 0),
        };
        let (warnings, warnings_omitted) = self.warnings.snapshot();
        CaptureStatus {
            state,
            elapsed_ms: self.started.elapsed().as_millis() as u64,
            events: cuda + hosts,
            cuda_calls: cuda,
            host_events: hosts,
            events_written: self.written.load(Ordering::Relaxed),
            drops: losses.total(),
            losses,
            unfinished_calls,
            ops,
            host,
            libraries: self.libraries.lock().map(|l| l.clone()).unwrap_or_default(),
            processes,
            db: self.db.clone(),
            error: self.error.lock().ok().and_then(|e| e.clone()),
            warnings,
            warnings_omitted,
            gpu: self.gpu.lock().map(|g| g.clone()).unwrap_or_default(),
            stacks: self.stacks.lock().map(|s| s.clone()).unwrap_or_default(),
            launch_levels: self
                .launch_levels
                .lock()
                .map(|l| l.clone())
                .unwrap_or_default(),
        }
    }

    /// Sets the life-cycle state.
    pub fn set_state(&self, state: CaptureState) {
        if let Ok(mut s) = self.state.lock() {
            *s = state;
        }
    }
}
