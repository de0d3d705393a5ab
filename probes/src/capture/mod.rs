//! `start` wires a capture together in two halves: [`attach`] puts the
//! probes in place and opens the session while a launched command still
//! waits at its gate; [`threads`] starts the writer, the poller, the
//! samplers and the control thread, then releases the command. The caller
//! keeps a [`CaptureHandle`] for status and stop.

mod attach;
mod handle;
mod held;
mod threads;

use crate::config::CaptureConfig;
use crate::error::CaptureError;
use crate::phase_timer::PhaseTimer;

pub use handle::{CaptureHandle, StopHandle};

/// Starts a capture in background threads and returns once every probe is
/// attached (a launched command is released only then).
pub fn start(config: CaptureConfig) -> Result<CaptureHandle, CaptureError> {
    let timer = PhaseTimer::start("capture start");
    let attached = attach::attach(&config, &timer)?;
    threads::start_threads(&config, attached, &timer)
}
