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

use crate::call_fold::CallFold;
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
    /// Entry of the thread's latest synchronisation of every stream, and
    /// per stream of its latest stream synchronisation: work entered before
    /// them was already waited for, whatever order it reaches the tracker in
    /// (calls counted in the kernel arrive after calls kept as rows).
    synced_all: i64,
    synced: BTreeMap<i64, i64>,
}

impl ThreadState {
    /// Adds `calls` calls spending `api_ns` in `part`, lying between
    /// `start` and `end`, to the thread's burst (or starts a new one).
    fn burst(&mut self, closed: &mut Vec<ActivitySpan>, at: BurstPart) {
        match &mut self.burst {
            Some(b) if at.start < b.end_ns + BURST_GAP_NS && at.end > b.start_ns - BURST_GAP_NS => {
                b.start_ns = b.start_ns.min(at.start);
                b.end_ns = b.end_ns.max(at.end);
                b.calls += at.calls;
                b.parts[at.part.index()] += at.api_ns;
            }
            open => {
                if let Some(done) = open.take() {
                    closed.push(done);
                }
                let mut parts = [0; 5];
                parts[at.part.index()] = at.api_ns;
                *open = Some(ActivitySpan {
                    pid: at.pid,
                    tid: at.tid,
                    kind: ActivityKind::Burst,
                    start_ns: at.start,
                    end_ns: at.end,
                    calls: at.calls,
                    parts,
                });
            }
        }
        self.last_end = self.last_end.max(at.end);
    }

    /// The moment work queued on `stream` must follow to still be pending.
    fn synced_before(&self, stream: i64) -> i64 {
        self.synced_all
            .max(self.synced.get(&stream).copied().unwrap_or(i64::MIN))
    }

    /// A synchronisation entered at `ts` ending at `end`: work queued before
    /// it is done; when it `waited`, that work was queued until `end`.
    fn sync(&mut self, closed: &mut Vec<ActivitySpan>, at: SyncAt, role: OpRole) {
        let queued = |start: i64| ActivitySpan {
            pid: at.pid,
            tid: at.tid,
            kind: ActivityKind::Queued,
            start_ns: start,
            end_ns: at.end,
            calls: 0,
            parts: [0; 5],
        };
        if role.device_wide || at.stream == 0 {
            self.synced_all = self.synced_all.max(at.ts);
            let (done, left): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
                .into_iter()
                .partition(|(_, start)| *start <= at.ts);
            self.pending = left.into_iter().collect();
            for (_, start) in done {
                if at.waited && start < at.end {
                    closed.push(queued(start));
                }
            }
        } else {
            let seen = self.synced.entry(at.stream).or_insert(i64::MIN);
            *seen = (*seen).max(at.ts);
            if let Some(&start) = self.pending.get(&at.stream) {
                if start <= at.ts {
                    self.pending.remove(&at.stream);
                    if at.waited && start < at.end {
                        closed.push(queued(start));
                    }
                }
            }
        }
    }
}

/// Where a burst grows: `calls` calls between `start` and `end` spending
/// `api_ns` in `part`.
struct BurstPart {
    pid: i32,
    tid: i32,
    start: i64,
    end: i64,
    calls: i64,
    api_ns: i64,
    part: CallPart,
}

/// A synchronisation of `stream` entered at `ts`, ending at `end`.
struct SyncAt {
    pid: i32,
    tid: i32,
    ts: i64,
    end: i64,
    stream: i64,
    waited: bool,
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
        st.burst(
            &mut self.closed,
            BurstPart {
                pid,
                tid,
                start: ts_ns,
                end,
                calls: 1,
                api_ns: dur_ns,
                part: role.part,
            },
        );
        if role.async_work {
            if ts_ns >= st.synced_before(stream) {
                st.pending.entry(stream).or_insert(ts_ns);
            }
        } else if role.sync {
            let at = SyncAt {
                pid,
                tid,
                ts: ts_ns,
                end,
                stream,
                waited: dur_ns >= SYNC_WAITED_NS,
            };
            st.sync(&mut self.closed, at, role);
        }
    }

    /// Adds the calls of an outer fold counted in the kernel
    /// ([`CallFold`]) at once: they lie in one burst (no gap of
    /// [`BURST_GAP_NS`] between them); work they queued is pending from the
    /// first of them entered after the stream's latest synchronisation;
    /// synchronisations among them returned at once (a fold holds only calls
    /// shorter than [`SYNC_WAITED_NS`]), the last entered at its last entry.
    pub fn add_fold(&mut self, f: &CallFold, role: OpRole) {
        let (pid, tid) = (f.pid, f.tid);
        let st = self.threads.entry((pid, tid)).or_default();
        st.burst(
            &mut self.closed,
            BurstPart {
                pid,
                tid,
                start: f.ts_ns,
                end: f.last_end_ns.max(f.ts_ns),
                calls: f.count.max(1),
                api_ns: f.dur_ns.max(0),
                part: role.part,
            },
        );
        if role.async_work {
            let after = st.synced_before(f.stream).saturating_sub(1);
            if let Some(start) = f.first_entry_after(after) {
                st.pending.entry(f.stream).or_insert(start);
            }
        } else if role.sync {
            let at = SyncAt {
                pid,
                tid,
                ts: f.last_ts_ns,
                end: f.last_end_ns,
                stream: f.stream,
                waited: false,
            };
            st.sync(&mut self.closed, at, role);
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

    fn fold(op_id: u16, ts: i64, last: i64, count: i64, stream: i64) -> CallFold {
        CallFold {
            ts_ns: ts,
            last_ts_ns: last,
            last_end_ns: last + 10_000,
            pid: 1,
            tid: 1,
            op_id,
            nested: false,
            stream,
            count,
            dur_ns: 10_000 * count,
            min_dur_ns: 10_000,
            max_dur_ns: 10_000,
            bytes: 0,
            threads: 0,
            small: 0,
        }
    }

    #[test]
    fn folds_join_the_burst_and_queue_work_only_after_the_last_sync() {
        // Copies and short syncs alternating for 0.9 ms, counted in the
        // kernel (two folds, sent sync first: the order of their last
        // calls), then a sync that waited 0.5 ms, kept as a row.
        let copy = OpRole::of("cudaMemcpyAsync", OpClass::Copy);
        let mut t = ActivityTracker::default();
        t.add_fold(&fold(41, 50_000, 850_000, 9, 7), sync());
        t.add_fold(&fold(7, 0, 900_000, 10, 7), copy);
        t.add(1, 1, MS, MS / 2, 7, sync());
        let spans = t.finish();
        let bursts: Vec<_> = spans
            .iter()
            .filter(|s| s.kind == ActivityKind::Burst)
            .map(|s| (s.start_ns, s.end_ns, s.calls, s.api_ns()))
            .collect();
        assert_eq!(bursts, vec![(0, 3 * MS / 2, 20, 190_000 + MS / 2)]);
        // Queued from the copy entered after the last short sync (the
        // copies lie evenly between their first and last entry), not from
        // the first copy.
        let queued: Vec<_> = spans
            .iter()
            .filter(|s| s.kind == ActivityKind::Queued)
            .map(|s| (s.start_ns, s.end_ns))
            .collect();
        assert_eq!(queued, vec![(900_000, 3 * MS / 2)]);
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
