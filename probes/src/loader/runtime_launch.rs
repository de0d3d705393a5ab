//! The runtime launch functions' own links, which go once the driver
//! level is seen to catch every launch (see [`crate::launch_level`]): first
//! their entry side, then, once no runtime launch is in flight, their
//! return side.

use super::Probes;

impl Probes {
    /// True when some runtime launch functions still have their entry
    /// probe linked (links attached since the last detach included).
    pub fn has_runtime_launch_entries(&self) -> bool {
        self.runtime_launch.iter().any(|l| l[1].is_some())
    }

    /// Detaches the entry side of the runtime launch probes: no new runtime
    /// launch is seen from now on (the driver probe sees it).
    pub fn detach_runtime_launch_entries(&mut self) {
        for l in &mut self.runtime_launch {
            drop(l[1].take());
        }
    }

    /// Detaches the return side of the runtime launch probes whose entry
    /// side is gone (call once no runtime launch is in flight); links
    /// attached since keep both sides.
    pub fn detach_runtime_launch_returns(&mut self) {
        for l in &mut self.runtime_launch {
            if l[1].is_none() {
                drop(l[0].take());
            }
        }
        self.runtime_launch
            .retain(|l| l.iter().any(Option::is_some));
    }
}
