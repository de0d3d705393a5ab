//! Per-thread CUDA figures of a capture that folded calls in the kernel
//! (call folding: most fast calls have no raw row). The raw rows are then a
//! sample; the recorded activity spans count every outer call of every
//! thread with its time per part, so per-thread counts and times come from
//! them. Files without folding keep their raw-row figures unchanged.

use super::Dataset;
use ingero_store::activity::{ActivityKind, CallPart};

/// One thread's outer CUDA calls, from its activity bursts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadCalls {
    /// Outer calls.
    pub calls: i64,
    /// Time inside them, ns.
    pub api_ns: i64,
    /// Of which in synchronisations, ns.
    pub sync_ns: i64,
    /// Start of its first burst, epoch ns.
    pub first_ns: i64,
    /// End of its last burst, epoch ns.
    pub last_ns: i64,
}

impl Dataset {
    /// True when the file's captures folded calls and the activity spans
    /// were recorded: per-thread figures come from the spans.
    pub fn per_thread_from_spans(&self) -> bool {
        self.call_row_keep_ns.is_some()
            && self.activity_origin == crate::activity::ActivityOrigin::Recorded
    }

    /// Outer calls of thread `tid` of `pid` in the window, from its
    /// activity bursts; `None` when it has none.
    pub fn thread_calls(&self, pid: i32, tid: i32) -> Option<ThreadCalls> {
        let mut t: Option<ThreadCalls> = None;
        for s in self
            .activity
            .iter()
            .filter(|s| s.kind == ActivityKind::Burst && s.pid == pid && s.tid == tid)
        {
            let e = t.get_or_insert(ThreadCalls {
                first_ns: i64::MAX,
                last_ns: i64::MIN,
                ..ThreadCalls::default()
            });
            e.calls += s.calls;
            e.api_ns = e.api_ns.saturating_add(s.api_ns());
            e.sync_ns = e.sync_ns.saturating_add(s.parts[CallPart::Sync.index()]);
            e.first_ns = e.first_ns.min(s.start_ns);
            e.last_ns = e.last_ns.max(s.end_ns);
        }
        t
    }
}
