//! How a capture is asked to end, and the words its file keeps for why:
//! a stop request carries its reason ("SIGTERM", "stop_trace requested"),
//! and the writer's first storage error ends the capture at once instead of
//! leaving the probes attached to a job whose events can no longer be kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// A request to stop, with the reason the file will record. The first
/// reason given wins: a signal that arrives while the capture already
/// stops for its duration does not rename the ending.
#[derive(Debug, Default)]
pub struct StopRequest {
    asked: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl StopRequest {
    /// Asks the capture to stop, for `reason`.
    pub fn request(&self, reason: &str) {
        if let Ok(mut slot) = self.reason.lock() {
            slot.get_or_insert_with(|| reason.to_string());
        }
        self.asked.store(true, Ordering::Release);
    }

    /// True once a stop was asked for.
    pub fn requested(&self) -> bool {
        self.asked.load(Ordering::Acquire)
    }

    /// The reason of the first request, if any was given.
    pub fn reason(&self) -> Option<String> {
        self.reason.lock().ok().and_then(|r| r.clone())
    }
}

/// The writer's first storage error, which the control thread watches so
/// that the capture stops as soon as nothing more can be kept.
#[derive(Debug, Default)]
pub struct WriterFailure {
    failed: AtomicBool,
    detail: Mutex<Option<WriterFault>>,
}

/// What the writer met, and how far the file is whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterFault {
    /// The storage error, as SQLite said it.
    pub error: String,
    /// Epoch ns up to which every event delivered was committed.
    pub held_until_ns: i64,
}

impl WriterFailure {
    /// Records the first failure (later ones are ignored).
    pub fn set(&self, error: String, held_until_ns: i64) {
        if let Ok(mut slot) = self.detail.lock() {
            slot.get_or_insert(WriterFault {
                error,
                held_until_ns,
            });
        }
        self.failed.store(true, Ordering::Release);
    }

    /// True once the writer has failed.
    pub fn is_set(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// The first failure, if there was one.
    pub fn fault(&self) -> Option<WriterFault> {
        self.detail.lock().ok().and_then(|d| d.clone())
    }
}

/// The reason recorded when the configured duration ends the capture.
pub fn duration_elapsed(d: Duration) -> String {
    let ms = d.as_millis();
    let text = if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", d.as_secs_f64())
    };
    format!("duration {text} elapsed")
}

/// The reason recorded when the launched command ends the capture.
pub fn command_exited(status: Option<i32>) -> String {
    match status {
        Some(code) if code > 128 => format!(
            "traced command exited (status {code}, killed by signal {})",
            code - 128
        ),
        Some(code) => format!("traced command exited (status {code})"),
        None => "traced command exited".to_string(),
    }
}

/// The reason recorded when the writer's error ends the capture.
pub fn writer_failed(error: &str) -> String {
    format!("writer failed: {error}")
}

/// The reason recorded for a stop asked without one.
pub const REQUESTED: &str = "stop requested";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reason_wins_and_endings_read_as_sentences() {
        let r = StopRequest::default();
        assert!(!r.requested());
        r.request("SIGTERM");
        r.request("SIGINT");
        assert!(r.requested());
        assert_eq!(r.reason().as_deref(), Some("SIGTERM"));
        assert_eq!(
            duration_elapsed(Duration::from_secs(10)),
            "duration 10 s elapsed"
        );
        assert_eq!(
            duration_elapsed(Duration::from_millis(1500)),
            "duration 1.5 s elapsed"
        );
        assert_eq!(command_exited(Some(0)), "traced command exited (status 0)");
        assert_eq!(
            command_exited(Some(137)),
            "traced command exited (status 137, killed by signal 9)"
        );
        let f = WriterFailure::default();
        f.set("database or disk is full".into(), 5);
        f.set("later".into(), 9);
        assert_eq!(
            f.fault().map(|x| (x.error, x.held_until_ns)),
            Some(("database or disk is full".into(), 5))
        );
    }
}
