//! CUDA activity spans: when each thread was feeding the GPU, kept exactly
//! whatever raw rows the sampling policy drops.
//!
//! The GPU-idle breakdown and the gap list need to know, for every thread,
//! when it was inside CUDA calls and when it had queued work that a later
//! synchronisation waited for. Raw rows cannot say it once they are sampled
//! (`--sample 50` keeps 50 rows per second and op), so the writer folds every
//! outer call into spans as it arrives and stores the spans themselves
//! (`cuda_activity`). A reader of a file without that table (older native
//! files, Ingero files) folds the raw rows it has through the same
//! [`ActivityTracker`], so both paths follow one rule.
//!
//! **Bursts** ([`ActivityKind::Burst`]): successive outer calls of one thread
//! less than [`BURST_GAP_NS`] apart form one span; its time inside calls is
//! kept per [`CallPart`], the rest of it is host time between calls.
//! **Queued work** ([`ActivityKind::Queued`]): from the first asynchronous
//! launch, copy or graph launch after a synchronisation to the end of a
//! synchronisation that really waited (at least [`SYNC_WAITED_NS`]) for it.
//! Nested calls (the driver half of a runtime call) are left out: their time
//! is inside the outer call already.

use crate::catalog::OpClass;
use std::collections::{BTreeMap, HashMap};

/// Calls of one thread closer than this join one burst: gaps of at least
/// this length between bursts are exact, shorter ones are host time inside
/// a burst.
pub const BURST_GAP_NS: i64 = 1_000_000;

/// A synchronisation shorter than this returned at once: the work queued
/// before it had already finished at a moment the host cannot see.
pub const SYNC_WAITED_NS: i64 = 100_000;

/// Open bursts ending this long before the newest event of a batch are
/// written out (a late event can still arrive out of order within it).
pub const CLOSE_LAG_NS: i64 = 1_000_000_000;

/// Which part of a burst's time inside CUDA a call adds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CallPart {
    /// Kernel and graph launches.
    Launch,
    /// Allocation and release, blocking or stream-ordered.
    AllocFree,
    /// Stream, event, device and context synchronisation.
    Sync,
    /// Copies and memsets.
    Copy,
    /// Everything else (events, queries, setup).
    #[default]
    Other,
}

impl CallPart {
    /// Every part, in the order of [`ActivitySpan::parts`].
    pub const ALL: [CallPart; 5] = [
        CallPart::Launch,
        CallPart::AllocFree,
        CallPart::Sync,
        CallPart::Copy,
        CallPart::Other,
    ];

    /// Index in [`ActivitySpan::parts`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Column of `cuda_activity` holding this part.
    pub fn column(self) -> &'static str {
        match self {
            CallPart::Launch => "launch_ns",
            CallPart::AllocFree => "alloc_free_ns",
            CallPart::Sync => "sync_ns",
            CallPart::Copy => "copy_ns",
            CallPart::Other => "other_ns",
        }
    }
}

/// How one op takes part in the activity model, decided from its name and
/// class (so files with another op catalogue follow the same rule).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpRole {
    /// Enqueues GPU work and returns: launches, graph launches, asynchronous
    /// copies and memsets.
    pub async_work: bool,
    /// Blocks until queued work is done.
    pub sync: bool,
    /// The synchronisation covers every stream of the thread (device,
    /// context, event or synchronous copy).
    pub device_wide: bool,
    /// A synchronous copy or memset.
    pub sync_copy: bool,
    /// Where its time goes in a burst.
    pub part: CallPart,
}

impl OpRole {
    /// The role of the op named `name` of class `class`.
    pub fn of(name: &str, class: OpClass) -> OpRole {
        let is_async = name.contains("Async");
        let sync_copy = match class {
            OpClass::Copy => !is_async,
            OpClass::Other => name.starts_with("cudaMemset") && !is_async,
            _ => false,
        };
        let part = match class {
            OpClass::Launch | OpClass::GraphLaunch => CallPart::Launch,
            OpClass::Alloc | OpClass::Free | OpClass::AllocAsync | OpClass::FreeAsync => {
                CallPart::AllocFree
            }
            OpClass::Sync => CallPart::Sync,
            OpClass::Copy => CallPart::Copy,
            OpClass::Other if name.contains("Memset") => CallPart::Copy,
            _ => CallPart::Other,
        };
        OpRole {
            async_work: match class {
                OpClass::Launch
                | OpClass::GraphLaunch
                | OpClass::Collective
                | OpClass::PointToPoint => true,
                OpClass::Copy | OpClass::Other => is_async,
                _ => false,
            },
            sync: class == OpClass::Sync || sync_copy,
            device_wide: sync_copy
                || name.contains("Device")
                || name.contains("Ctx")
                || name.contains("Event"),
            sync_copy,
            part,
        }
    }
}

/// What a span stands for (`cuda_activity.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActivityKind {
    /// Calls of one thread less than [`BURST_GAP_NS`] apart.
    Burst,
    /// Work queued by the thread until a synchronisation waited for it.
    Queued,
}

impl ActivityKind {
    /// Number stored in `cuda_activity.kind`.
    pub fn id(self) -> i64 {
        match self {
            ActivityKind::Burst => 1,
            ActivityKind::Queued => 2,
        }
    }

    /// Inverse of [`ActivityKind::id`].
    pub fn from_id(id: i64) -> Option<ActivityKind> {
        match id {
            1 => Some(ActivityKind::Burst),
            2 => Some(ActivityKind::Queued),
            _ => None,
        }
    }
}

/// One `cuda_activity` row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivitySpan {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Burst or queued work.
    pub kind: ActivityKind,
    /// Start, epoch ns.
    pub start_ns: i64,
    /// End, epoch ns.
    pub end_ns: i64,
    /// Outer calls in a burst (0 for queued work).
    pub calls: i64,
    /// Time inside those calls per [`CallPart`], ns (zeros for queued work).
    pub parts: [i64; 5],
}

impl ActivitySpan {
    /// Time inside CUDA calls, ns.
    pub fn api_ns(&self) -> i64 {
        self.parts.iter().sum()
    }

    /// Length, ns.
    pub fn len_ns(&self) -> i64 {
        self.end_ns - self.start_ns
    }
}

#[derive(Debug, Default)]
struct ThreadState {
    burst: Option<ActivitySpan>,
    /// Stream -> start of the first work queued on it since its last sync.
    pending: BTreeMap<i64, i64>,
    last_end: i64,
}

/// Folds outer CUDA calls into [`ActivitySpan`]s, one thread at a time.
#[derive(Debug, Default)]
pub struct ActivityTracker {
    threads: HashMap<(i32, i32), ThreadState>,
    closed: Vec<ActivitySpan>,
}

impl ActivityTracker {
    /// Adds one outer call (nested calls must not be passed).
    pub fn add(&mut self, pid: i32, tid: i32, ts_ns: i64, dur_ns: i64, stream: i64, role: OpRole) {
        let dur_ns = dur_ns.max(0);
        let end = ts_ns.saturating_add(dur_ns);
        let st = self.threads.entry((pid, tid)).or_default();
        match &mut st.burst {
            Some(b) if ts_ns < b.end_ns + BURST_GAP_NS && end > b.start_ns - BURST_GAP_NS => {
                b.start_ns = b.start_ns.min(ts_ns);
                b.end_ns = b.end_ns.max(end);
                b.calls += 1;
                b.parts[role.part.index()] += dur_ns;
            }
            open => {
                if let Some(done) = open.take() {
                    self.closed.push(done);
                }
                let mut parts = [0; 5];
                parts[role.part.index()] = dur_ns;
                *open = Some(ActivitySpan {
                    pid,
                    tid,
                    kind: ActivityKind::Burst,
                    start_ns: ts_ns,
                    end_ns: end,
                    calls: 1,
                    parts,
                });
            }
        }
        st.last_end = st.last_end.max(end);
        let queued = |start: i64| ActivitySpan {
            pid,
            tid,
            kind: ActivityKind::Queued,
            start_ns: start,
            end_ns: end,
            calls: 0,
            parts: [0; 5],
        };
        if role.async_work {
            st.pending.entry(stream).or_insert(ts_ns);
        } else if role.sync {
            let waited = dur_ns >= SYNC_WAITED_NS;
            if role.device_wide || stream == 0 {
                for (_, start) in std::mem::take(&mut st.pending) {
                    if waited && start < end {
                        self.closed.push(queued(start));
                    }
                }
            } else if let Some(start) = st.pending.remove(&stream) {
                if waited && start < end {
                    self.closed.push(queued(start));
                }
            }
        }
    }

    /// Closes bursts that ended at least [`CLOSE_LAG_NS`] before `now_ns`.
    pub fn close_before(&mut self, now_ns: i64) {
        for st in self.threads.values_mut() {
            if st
                .burst
                .is_some_and(|b| b.end_ns.saturating_add(CLOSE_LAG_NS) <= now_ns)
            {
                if let Some(b) = st.burst.take() {
                    self.closed.push(b);
                }
            }
        }
    }

    /// Takes the spans closed so far.
    pub fn drain(&mut self) -> Vec<ActivitySpan> {
        std::mem::take(&mut self.closed)
    }

    /// Closes everything: open bursts end, and work still queued at the end
    /// counts as queued until the thread's last call returned.
    pub fn finish(mut self) -> Vec<ActivitySpan> {
        let mut threads: Vec<_> = std::mem::take(&mut self.threads).into_iter().collect();
        threads.sort_by_key(|(k, _)| *k);
        for ((pid, tid), st) in threads {
            if let Some(b) = st.burst {
                self.closed.push(b);
            }
            for (_, start) in st.pending {
                if start < st.last_end {
                    self.closed.push(ActivitySpan {
                        pid,
                        tid,
                        kind: ActivityKind::Queued,
                        start_ns: start,
                        end_ns: st.last_end,
                        calls: 0,
                        parts: [0; 5],
                    });
                }
            }
        }
        self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: i64 = 1_000_000;

    fn launch() -> OpRole {
        OpRole::of("cudaLaunchKernel", OpClass::Launch)
    }

    fn sync() -> OpRole {
        OpRole::of("cudaStreamSynchronize", OpClass::Sync)
    }

    #[test]
    fn calls_closer_than_the_gap_form_one_burst() {
        let mut t = ActivityTracker::default();
        t.add(1, 1, 0, 10, 0, launch());
        t.add(1, 1, MS / 2, 10, 0, launch());
        t.add(1, 1, 3 * MS, 10, 0, launch());
        let mut spans = t.finish();
        spans.retain(|s| s.kind == ActivityKind::Burst);
        assert_eq!(spans.len(), 2);
        assert_eq!((spans[0].start_ns, spans[0].end_ns), (0, MS / 2 + 10));
        assert_eq!(spans[0].calls, 2);
        assert_eq!(spans[0].parts[CallPart::Launch.index()], 20);
        assert_eq!(spans[1].start_ns, 3 * MS);
    }

    #[test]
    fn a_sync_that_waited_closes_queued_work() {
        let mut t = ActivityTracker::default();
        t.add(1, 1, 0, 10, 7, launch());
        t.add(1, 1, 5 * MS, 2 * MS, 7, sync());
        // A sync that returned at once says nothing about when work ended.
        t.add(1, 1, 20 * MS, 10, 7, launch());
        t.add(1, 1, 30 * MS, 1_000, 7, sync());
        let queued: Vec<_> = t
            .finish()
            .into_iter()
            .filter(|s| s.kind == ActivityKind::Queued)
            .map(|s| (s.start_ns, s.end_ns))
            .collect();
        assert_eq!(queued, vec![(0, 7 * MS)]);
    }

    #[test]
    fn roles_follow_the_class() {
        assert_eq!(
            OpRole::of("cudaFree", OpClass::Free).part,
            CallPart::AllocFree
        );
        assert!(OpRole::of("cuGraphLaunch", OpClass::GraphLaunch).async_work);
        assert!(!OpRole::of("cudaStreamQuery", OpClass::Query).sync);
        assert!(OpRole::of("cudaMemcpy", OpClass::Copy).sync_copy);
        assert!(!OpRole::of("cudaMemcpyAsync", OpClass::Copy).sync);
    }
}
