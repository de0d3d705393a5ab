//! Reading a driver sample buffer without reading anything twice.
//!
//! NVML keeps a ring of recent samples per device and series and returns
//! those stamped after the `lastSeenTimeStamp` given. A [`Cursor`] holds
//! that timestamp for one series and filters what the driver answers: only
//! samples newer than the last round, each (timestamp, key) once, so a
//! driver that returns a sample again (or overlapping answers) cannot make
//! a duplicate row.

use std::collections::HashSet;
use std::hash::Hash;

/// The newest driver timestamp (µs) read so far from one series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    last_us: u64,
}

impl Cursor {
    /// Starts at `from_us`: samples stamped at or before it are not wanted
    /// (they predate the capture).
    pub fn new(from_us: u64) -> Cursor {
        Cursor { last_us: from_us }
    }

    /// The `lastSeenTimeStamp` to ask the driver with.
    pub fn last_seen(&self) -> u64 {
        self.last_us
    }

    /// The samples of `answer` newer than the cursor, oldest first, each
    /// (timestamp, `key`) once; advances the cursor to the newest of them.
    /// Samples stamped after `until_us` are left out and do not move it.
    pub fn take_new<T, K: Eq + Hash>(
        &mut self,
        answer: Vec<T>,
        until_us: u64,
        stamp: impl Fn(&T) -> u64,
        key: impl Fn(&T) -> K,
    ) -> Vec<T> {
        let mut seen = HashSet::new();
        let mut fresh: Vec<T> = answer
            .into_iter()
            .filter(|s| {
                let ts = stamp(s);
                ts > self.last_us && ts <= until_us && seen.insert((ts, key(s)))
            })
            .collect();
        fresh.sort_by_key(|s| stamp(s));
        if let Some(newest) = fresh.last() {
            self.last_us = stamp(newest);
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_read_twice() {
        let mut c = Cursor::new(100);
        // (ts, pid)
        let first = c.take_new(
            vec![(90, 1), (120, 1), (120, 2), (120, 1), (110, 1)],
            u64::MAX,
            |s| s.0,
            |s| s.1,
        );
        assert_eq!(first, vec![(110, 1), (120, 1), (120, 2)]);
        assert_eq!(c.last_seen(), 120);
        // The driver answers again from an older point: only the new one stays.
        let second = c.take_new(
            vec![(110, 1), (120, 2), (130, 2)],
            u64::MAX,
            |s| s.0,
            |s| s.1,
        );
        assert_eq!(second, vec![(130, 2)]);
        assert_eq!(c.last_seen(), 130);
        let none: Vec<(u64, i32)> = c.take_new(Vec::new(), u64::MAX, |s| s.0, |s| s.1);
        assert!(none.is_empty());
        assert_eq!(c.last_seen(), 130);
    }

    #[test]
    fn samples_after_the_stop_are_left_out() {
        let mut c = Cursor::new(0);
        let got = c.take_new(vec![10u64, 20, 30], 20, |s| *s, |_| ());
        assert_eq!(got, vec![10, 20]);
        assert_eq!(c.last_seen(), 20);
    }
}
