//! Which launch levels a capture probes: the `launch_levels` part of the
//! capture status (see [`crate::launch_level`] for why one level can go).

use serde::Serialize;

/// What the capture probes of the two launch levels, for its status and
/// summary: the runtime launch functions' counts in a capture whose runtime
/// level went cover only the launches before it went (later ones are
/// counted under the driver's functions).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LaunchLevelStatus {
    /// Times the runtime launch probes went: once per decision (a process
    /// that maps the runtime after an earlier one brings a new decision).
    pub runtime_detached: u64,
    /// Runtime launches probed up to the last time they went.
    pub runtime_launches_probed: u64,
    /// When the runtime launch probes last went, ms since the start.
    pub last_detached_ms: Option<u64>,
    /// Both levels stay probed for good (`--all-launch-levels`).
    pub both_kept: bool,
}
