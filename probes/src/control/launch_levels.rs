//! Settling the launch levels while the capture runs: the runtime launch
//! probes go once the driver level is seen to catch every launch (see
//! [`crate::launch_level`]).

use super::Control;
use crate::launch_level::{LaunchLevelState, RUNTIME_LAUNCH_OPS};
use crate::writer::WriterMsg;
use std::time::{Duration, Instant};

/// How long runtime launches in flight may keep their return probe once
/// the entry side is gone; a launch blocked longer keeps it for good.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

impl Control {
    /// At every tick: detaches the runtime launch probes when the driver
    /// level sees every launch (see [`crate::launch_level`]). Until the
    /// traced processes map the runtime there is nothing to decide, and a
    /// process that maps it after the decision gets its own count.
    pub(super) fn settle_launch_level(&mut self) {
        let Some(probes) = self.probes.as_mut() else {
            return;
        };
        self.launch_level = match self.launch_level {
            LaunchLevelState::Both { base } => {
                if probes.has_runtime_launch_entries()
                    && self
                        .tables
                        .launch_levels
                        .read()
                        .since(base)
                        .runtime_level_redundant()
                {
                    probes.detach_runtime_launch_entries();
                    LaunchLevelState::Draining {
                        since: Instant::now(),
                        since_ns: self.clock.now_epoch(),
                    }
                } else {
                    LaunchLevelState::Both { base }
                }
            }
            LaunchLevelState::Draining { since, since_ns } => {
                // Entries linked since the decision (a process that mapped
                // the runtime meanwhile) go the same way.
                probes.detach_runtime_launch_entries();
                if !self.tables.open_calls.any_open(&RUNTIME_LAUNCH_OPS) {
                    probes.detach_runtime_launch_returns();
                    let c = self.tables.launch_levels.read();
                    tracing::info!(
                        runtime_launches = c.runtime,
                        nested_driver_launches = c.nested_driver,
                        "every runtime launch reached cuLaunchKernel: launches are probed at the driver only from now on"
                    );
                    self.note_runtime_level_gone(since_ns, c.runtime);
                    LaunchLevelState::DriverOnly
                } else if since.elapsed() >= DRAIN_LIMIT {
                    // A launch blocked this long: leave its return probe in
                    // place (no runtime launch is recorded any more).
                    self.note_runtime_level_gone(
                        since_ns,
                        self.tables.launch_levels.read().runtime,
                    );
                    LaunchLevelState::Kept
                } else {
                    LaunchLevelState::Draining { since, since_ns }
                }
            }
            LaunchLevelState::DriverOnly if probes.has_runtime_launch_entries() => {
                let base = self.tables.launch_levels.read();
                self.send(WriterMsg::LaunchLevel {
                    ts_ns: self.clock.now_epoch(),
                    runtime_probed: true,
                    runtime_launches: base.runtime as i64,
                });
                LaunchLevelState::Both { base }
            }
            s => s,
        };
    }

    /// Records in the status and the database that the runtime launch
    /// probes' entries went at `at_ns` (epoch) after `probed` runtime
    /// launches: the runtime launch functions' counts stop there.
    fn note_runtime_level_gone(&self, at_ns: i64, probed: u64) {
        self.send(WriterMsg::LaunchLevel {
            ts_ns: at_ns,
            runtime_probed: false,
            runtime_launches: probed as i64,
        });
        if let Ok(mut l) = self.shared.launch_levels.lock() {
            l.runtime_detached += 1;
            l.runtime_launches_probed = probed;
            l.last_detached_ms = Some((at_ns - self.started_ns).max(0) as u64 / 1_000_000);
        }
    }
}
