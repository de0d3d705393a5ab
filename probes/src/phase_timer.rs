//! Where start-up and stop time go: each step of a capture's start and
//! stop logs, at debug level (`INGERO_LOG=ingero_probes=debug`), the
//! milliseconds since its stage began.

use std::time::Instant;

/// Times the steps of one stage (loading the programs, starting a capture).
pub(crate) struct PhaseTimer {
    began: Instant,
    stage: &'static str,
}

impl PhaseTimer {
    /// Starts timing `stage`.
    pub(crate) fn start(stage: &'static str) -> PhaseTimer {
        PhaseTimer {
            began: Instant::now(),
            stage,
        }
    }

    /// Logs that `phase` has ended.
    pub(crate) fn mark(&self, phase: &str) {
        tracing::debug!(
            phase,
            ms = self.began.elapsed().as_secs_f64() * 1e3,
            "{}",
            self.stage
        );
    }
}
