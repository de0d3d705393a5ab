//! NVML timestamps onto the capture clock.
//!
//! The driver stamps its samples with `gettimeofday()` in microseconds:
//! CLOCK_REALTIME. The capture clock ([`crate::clock::Clock`]) is
//! CLOCK_MONOTONIC shifted by the REALTIME - MONOTONIC offset measured at
//! the start, so it reads CLOCK_REALTIME, in ns, as it was when the capture
//! began. Both are therefore the same clock, epoch based, and a driver
//! stamp times 1000 is a capture timestamp, to within the offset
//! measurement (a microsecond or so) and as long as nobody steps the wall
//! clock. NTP slewing moves both clocks alike; a step moves only
//! CLOCK_REALTIME, so the sampler measures how far the wall clock now is
//! from the capture clock ([`wall_step_ns`]) and takes that off.

use crate::clock::{realtime_ns, Clock};

/// Below this, a difference between the wall clock and the capture clock is
/// measurement noise, not a step, and is ignored (so the same driver stamp
/// always converts to the same capture timestamp).
pub const STEP_THRESHOLD_NS: i64 = 1_000_000;

/// How far the wall clock is ahead of the capture clock now: 0 unless it
/// was stepped by more than [`STEP_THRESHOLD_NS`] since the start.
pub fn wall_step_ns(clock: &Clock) -> i64 {
    let step = realtime_ns() - clock.now_epoch();
    if step.abs() > STEP_THRESHOLD_NS {
        step
    } else {
        0
    }
}

/// A driver timestamp (epoch µs from gettimeofday) as capture epoch ns,
/// given the current [`wall_step_ns`].
pub fn nvml_us_to_capture_ns(us: u64, step_ns: i64) -> i64 {
    let ns = i64::try_from(us)
        .unwrap_or(i64::MAX / 1000)
        .saturating_mul(1000);
    ns.saturating_sub(step_ns)
}

/// A capture timestamp as a driver timestamp (the `lastSeenTimeStamp` of
/// an NVML query), rounded down to the microsecond.
pub fn capture_ns_to_nvml_us(ns: i64, step_ns: i64) -> u64 {
    let wall = ns.saturating_add(step_ns).max(0);
    (wall / 1000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn microseconds_become_nanoseconds_on_the_same_epoch() {
        // A stamp read on the H200 (1796287757359131 µs).
        assert_eq!(
            nvml_us_to_capture_ns(1_796_287_757_359_131, 0),
            1_796_287_757_359_131_000
        );
        assert_eq!(
            capture_ns_to_nvml_us(1_796_287_757_359_131_999, 0),
            1_796_287_757_359_131
        );
        assert_eq!(nvml_us_to_capture_ns(u64::MAX, 0), i64::MAX / 1000 * 1000);
        assert_eq!(capture_ns_to_nvml_us(-5, 0), 0);
    }

    #[test]
    fn a_stepped_wall_clock_is_taken_off() {
        // Wall clock stepped 2 s ahead: a stamp of wall time T is capture T - 2 s.
        let step = 2_000_000_000;
        assert_eq!(nvml_us_to_capture_ns(10_000_000, step), 8_000_000_000);
        assert_eq!(capture_ns_to_nvml_us(8_000_000_000, step), 10_000_000);
    }

    #[test]
    fn the_capture_clock_reads_as_the_wall_clock_now() {
        let c = Clock::measure();
        assert_eq!(wall_step_ns(&c), 0);
        let now_us = capture_ns_to_nvml_us(c.now_epoch(), 0);
        let wall = (realtime_ns() / 1000) as u64;
        assert!(wall.abs_diff(now_us) < 1000, "{wall} vs {now_us}");
    }
}
