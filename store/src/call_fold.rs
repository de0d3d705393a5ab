//! Calls counted in the kernel instead of stored one by one (call folding:
//! `probes/bpf/call_folds.h`). A fold stands for consecutive fast,
//! successful calls of one function, nesting and stream of one thread: the
//! recorder keeps a bounded sample of such calls as raw rows and counts the
//! rest here, so the aggregates (every call, its time and bytes) and the
//! activity spans stay exact while the file grows with time, not with the
//! call rate.

use serde::{Deserialize, Serialize};

/// Calls of one function, nesting and stream of one thread, none of them
/// failed or as long as the keep threshold ([`crate::schema::CALL_ROW_KEEP_NS`]),
/// that kept no raw row. The calls lie between `ts_ns` and `last_end_ns`
/// with no gap of 1 ms or more between them (the kernel sends a fold at
/// such a gap), so the whole fold lies inside one activity burst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallFold {
    /// First call's entry, epoch ns.
    pub ts_ns: i64,
    /// Last call's entry, epoch ns.
    pub last_ts_ns: i64,
    /// Last call's return, epoch ns.
    pub last_end_ns: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Catalogue id of the function.
    pub op_id: u16,
    /// Made inside another probed call of the thread (the driver half of a
    /// runtime call): its time lies inside that call's.
    pub nested: bool,
    /// Stream handle.
    pub stream: i64,
    /// Calls folded.
    pub count: i64,
    /// Their summed duration, ns.
    pub dur_ns: i64,
    /// Shortest, ns.
    pub min_dur_ns: i64,
    /// Longest, ns.
    pub max_dur_ns: i64,
    /// Their summed bytes arguments.
    pub bytes: i64,
    /// Kernel launches: threads started (grid x block), summed.
    #[serde(default)]
    pub threads: i64,
    /// Kernel launches of at most 65,536 threads.
    #[serde(default)]
    pub small: i64,
}

impl CallFold {
    /// Entry of the first of the fold's calls entered after `after_ns`,
    /// placing the calls evenly between the first and last entry (the
    /// kernel keeps only those two); `None` when none was.
    pub fn first_entry_after(&self, after_ns: i64) -> Option<i64> {
        if self.ts_ns > after_ns {
            return Some(self.ts_ns);
        }
        if self.last_ts_ns <= after_ns {
            return None;
        }
        let n = self.count.max(2) - 1;
        let span = (self.last_ts_ns - self.ts_ns).max(1);
        // Smallest i with ts + span * i / n > after.
        let i = ((after_ns - self.ts_ns) as i128 * n as i128 / span as i128 + 1) as i64;
        Some((self.ts_ns + (span as i128 * i.min(n) as i128 / n as i128) as i64).max(after_ns + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold(ts: i64, last: i64, count: i64) -> CallFold {
        CallFold {
            ts_ns: ts,
            last_ts_ns: last,
            last_end_ns: last + 10,
            pid: 1,
            tid: 1,
            op_id: 7,
            nested: false,
            stream: 0,
            count,
            dur_ns: 10 * count,
            min_dur_ns: 10,
            max_dur_ns: 10,
            bytes: 0,
            threads: 0,
            small: 0,
        }
    }

    #[test]
    fn the_first_call_after_a_moment_is_placed_on_the_even_spread() {
        let f = fold(1_000, 2_000, 11);
        assert_eq!(f.first_entry_after(0), Some(1_000));
        assert_eq!(f.first_entry_after(1_000), Some(1_100));
        assert_eq!(f.first_entry_after(1_150), Some(1_200));
        assert_eq!(f.first_entry_after(1_999), Some(2_000));
        assert_eq!(f.first_entry_after(2_000), None);
    }
}
