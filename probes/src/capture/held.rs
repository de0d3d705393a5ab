//! The launched command between its fork and its release: it waits at the
//! gate until the probes and the pid filter know it, and it must not run
//! untraced if the start fails on the way, so until then it is killed on
//! any early return.

use crate::config::Target;
use crate::error::CaptureError;
use crate::launch::{spawn_held, HeldChild};

/// A launched command not yet released: killed if the start fails.
pub(super) struct HeldUntilReady(Option<HeldChild>);

impl HeldUntilReady {
    /// Forks the command of a `Target::Command` (held at the gate); holds
    /// nothing for the other targets.
    pub(super) fn spawn(target: &Target) -> Result<HeldUntilReady, CaptureError> {
        Ok(HeldUntilReady(match target {
            Target::Command(argv) => Some(spawn_held(argv)?),
            _ => None,
        }))
    }

    /// The held command's pid, when there is one.
    pub(super) fn pid(&self) -> Option<i32> {
        self.0.as_ref().map(HeldChild::pid)
    }

    /// Hands the command over once the start can no longer fail on its
    /// account (it is then released by its owner, not killed here).
    pub(super) fn into_child(mut self) -> Option<HeldChild> {
        self.0.take()
    }
}

impl Drop for HeldUntilReady {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            kill(c);
        }
    }
}

fn kill(child: HeldChild) {
    let pid = child.pid();
    // SAFETY: signalling our own, never-released child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    child.detach();
}
