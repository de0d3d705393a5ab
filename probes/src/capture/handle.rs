//! The caller's side of a running capture: its status, a way to stop it
//! from elsewhere, and a wait for its end.

use crate::control::Control;
use crate::error::CaptureError;
use crate::shared::Shared;
use crate::status::{CaptureStatus, CaptureSummary};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A running capture.
pub struct CaptureHandle {
    shared: Arc<Shared>,
    control: JoinHandle<Result<CaptureSummary, CaptureError>>,
    ended: Arc<Ended>,
}

impl CaptureHandle {
    /// Starts the control thread on `control` and returns the handle that
    /// watches it: the last step of [`crate::start`].
    pub(super) fn spawn(control: Control, shared: Arc<Shared>) -> std::io::Result<CaptureHandle> {
        let ended = Arc::new(Ended::default());
        let on_end = EndedOnDrop(ended.clone());
        let control = std::thread::Builder::new()
            .name("ingero-control".into())
            .spawn(move || {
                let _on_end = on_end;
                control.run()
            })?;
        Ok(CaptureHandle {
            shared,
            control,
            ended,
        })
    }
}

/// Set when the control thread returns (or unwinds), so a caller can sleep
/// until the capture ends instead of polling for it.
#[derive(Default)]
struct Ended {
    done: Mutex<bool>,
    signal: Condvar,
}

/// Sets [`Ended`] when dropped: on every way out of the control thread.
struct EndedOnDrop(Arc<Ended>);

impl Drop for EndedOnDrop {
    fn drop(&mut self) {
        let mut done = match self.0.done.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *done = true;
        self.0.signal.notify_all();
    }
}

/// A cheap, clonable way to ask a capture to stop (from a signal handler
/// thread, for instance) without owning its handle.
#[derive(Clone)]
pub struct StopHandle {
    shared: Arc<Shared>,
}

impl StopHandle {
    /// Asks the capture to stop; `CaptureHandle::wait` then returns. The
    /// file records the ending as "stop requested".
    pub fn stop(&self) {
        self.request_stop(crate::stop::REQUESTED);
    }

    /// Asks the capture to stop for `reason` ("SIGTERM", "stop_trace
    /// requested"), which the file records as its `stop_reason` (the first
    /// reason given wins).
    pub fn request_stop(&self, reason: &str) {
        self.shared.stop.request(reason);
    }
}

impl CaptureHandle {
    /// Current counters and state.
    pub fn status(&self) -> CaptureStatus {
        self.shared.status()
    }

    /// A handle that can stop the capture from elsewhere.
    pub fn stopper(&self) -> StopHandle {
        StopHandle {
            shared: self.shared.clone(),
        }
    }

    /// True once the capture has ended by itself (duration, target exit).
    pub fn is_finished(&self) -> bool {
        self.control.is_finished()
    }

    /// Sleeps until the capture has ended or `timeout` has passed, whichever
    /// comes first; true when it has ended. A caller that redraws a status
    /// now and then learns of the end at once rather than at its next poll.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let guard = match self.ended.done.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (done, _) = match self
            .ended
            .signal
            .wait_timeout_while(guard, timeout, |done| !*done)
        {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        *done || self.control.is_finished()
    }

    /// Stops now: detaches the probes, writes the last batch, closes the database.
    pub fn stop(self) -> Result<CaptureSummary, CaptureError> {
        self.stop_because(crate::stop::REQUESTED)
    }

    /// Stops now as [`CaptureHandle::stop`] does, recording `reason` as
    /// the file's `stop_reason` (unless the capture was already stopping
    /// for another).
    pub fn stop_because(self, reason: &str) -> Result<CaptureSummary, CaptureError> {
        self.shared.stop.request(reason);
        self.wait()
    }

    /// Waits until the capture ends by itself (duration elapsed, traced
    /// command exited) or through a [`StopHandle`].
    pub fn wait(self) -> Result<CaptureSummary, CaptureError> {
        self.control
            .join()
            .map_err(|_| CaptureError::Internal("control thread panicked".into()))?
    }
}
