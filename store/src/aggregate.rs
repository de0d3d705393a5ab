//! Per-second totals kept for every event, so long captures can drop raw rows
//! without losing counts, sums and extremes.

use crate::catalog::AggSource;
use crate::model::{CudaCall, Event};
use crate::schema::{AGGREGATE_BUCKET_NS, SMALL_LAUNCH_THREADS};
use std::collections::HashMap;

/// Identity of one aggregate row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AggKey {
    /// Bucket start, epoch ns, a multiple of the bucket width.
    pub bucket_ns: i64,
    /// Process id.
    pub pid: i32,
    /// CUDA call or host event.
    pub source: AggSource,
    /// CUDA op id or host kind id.
    pub code: i64,
}

/// Running totals of one aggregate row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggTotals {
    /// Events seen.
    pub count: i64,
    /// Of those, events kept as raw rows (a page-allocation row keeps all
    /// the allocations of its run).
    pub stored: i64,
    /// Sum of durations.
    pub sum_dur_ns: i64,
    /// Smallest duration.
    pub min_dur_ns: i64,
    /// Largest duration.
    pub max_dur_ns: i64,
    /// Sum of bytes (copies, allocations, page allocations).
    pub sum_bytes: i64,
    /// Threads started by the launches counted (grid x block of each).
    pub sum_threads: i64,
    /// Launches of at most [`SMALL_LAUNCH_THREADS`] threads.
    pub small_launches: i64,
    /// The part of the totals above that nested calls make up
    /// ([`crate::nesting`]): subtract it to count outer calls only.
    pub nested: NestedPart,
    /// Calls counted whose duration was estimated, not measured
    /// ([`CudaCall::dur_estimated`]).
    pub estimated_count: i64,
    /// Their summed (estimated) duration, part of `sum_dur_ns`.
    pub estimated_dur_ns: i64,
    /// Of the estimated ones, those proven shorter than 50 us (the next
    /// probed call of their thread entered sooner): see
    /// [`crate::model::LaunchRun::bounded`].
    pub estimated_bounded: i64,
    /// Summed bounds of those, ns: an upper bound of their real time.
    pub estimated_bound_ns: i64,
}

/// Totals of the nested calls among those of an [`AggTotals`] row.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NestedPart {
    /// Nested calls counted.
    pub count: i64,
    /// Their summed duration.
    pub sum_dur_ns: i64,
    /// Their summed bytes.
    pub sum_bytes: i64,
    /// Threads their launches started.
    pub sum_threads: i64,
    /// Their small launches.
    pub small_launches: i64,
}

impl AggTotals {
    /// Totals before any event is counted.
    pub fn empty() -> AggTotals {
        AggTotals {
            count: 0,
            stored: 0,
            sum_dur_ns: 0,
            min_dur_ns: i64::MAX,
            max_dur_ns: i64::MIN,
            sum_bytes: 0,
            sum_threads: 0,
            small_launches: 0,
            nested: NestedPart::default(),
            estimated_count: 0,
            estimated_dur_ns: 0,
            estimated_bounded: 0,
            estimated_bound_ns: 0,
        }
    }
}

/// Launch totals of one CUDA call: (threads, 1 when a small launch).
fn launch_totals(c: &CudaCall) -> (i64, i64) {
    let threads = c.threads();
    let small = threads > 0 && threads <= SMALL_LAUNCH_THREADS;
    (threads, i64::from(small))
}

/// Accumulates totals in memory between two flushes.
#[derive(Debug, Default)]
pub struct Aggregator {
    rows: HashMap<AggKey, AggTotals>,
}

impl Aggregator {
    /// Key and (duration, bytes) of an event.
    pub fn key_of(event: &Event) -> (AggKey, i64, i64) {
        let (ts, pid, source, code, dur, bytes) = match event {
            Event::Cuda(c) => (
                c.ts_ns,
                c.pid,
                AggSource::Cuda,
                c.op_id as i64,
                c.dur_ns,
                c.bytes,
            ),
            Event::Host(h) => (
                h.ts_ns,
                h.pid,
                AggSource::Host,
                h.kind.id() as i64,
                h.dur_ns,
                h.page_bytes(),
            ),
            Event::LaunchRun(r) => (r.ts_ns, r.pid, AggSource::Cuda, r.op_id as i64, r.est_ns, 0),
            Event::CallFold(f) => (
                f.ts_ns,
                f.pid,
                AggSource::Cuda,
                f.op_id as i64,
                f.dur_ns,
                f.bytes,
            ),
        };
        let bucket_ns = ts.div_euclid(AGGREGATE_BUCKET_NS) * AGGREGATE_BUCKET_NS;
        (
            AggKey {
                bucket_ns,
                pid,
                source,
                code,
            },
            dur,
            bytes,
        )
    }

    /// Counts one event; `stored` says whether its raw row was kept.
    pub fn add(&mut self, event: &Event, stored: bool) {
        match event {
            Event::LaunchRun(r) => return self.add_run(r),
            Event::CallFold(f) => return self.add_fold(f),
            _ => {}
        }
        let (key, dur, bytes) = Self::key_of(event);
        let n = event.count();
        let t = self.rows.entry(key).or_insert_with(AggTotals::empty);
        t.count += n;
        t.stored += if stored { n } else { 0 };
        t.sum_dur_ns = t.sum_dur_ns.saturating_add(dur);
        t.min_dur_ns = t.min_dur_ns.min(dur);
        t.max_dur_ns = t.max_dur_ns.max(dur);
        t.sum_bytes = t.sum_bytes.saturating_add(bytes);
        let Event::Cuda(call) = event else {
            return;
        };
        let (threads, small) = launch_totals(call);
        t.sum_threads = t.sum_threads.saturating_add(threads);
        t.small_launches += small;
        if call.dur_estimated {
            t.estimated_count += 1;
            t.estimated_dur_ns = t.estimated_dur_ns.saturating_add(dur);
        }
        if call.nested {
            let n = &mut t.nested;
            n.count += 1;
            n.sum_dur_ns = n.sum_dur_ns.saturating_add(dur);
            n.sum_bytes = n.sum_bytes.saturating_add(bytes);
            n.sum_threads = n.sum_threads.saturating_add(threads);
            n.small_launches += small;
        }
    }

    /// A run of launches counted in the kernel, none stored, in the bucket
    /// of the first: its timed members with their measured total, min and
    /// max; its untimed ones with `est_ns` each, flagged estimated.
    fn add_run(&mut self, r: &crate::model::LaunchRun) {
        let (key, _, _) = Self::key_of(&Event::LaunchRun(*r));
        let t = self.rows.entry(key).or_insert_with(AggTotals::empty);
        t.count += r.count.max(1);
        t.sum_dur_ns = t.sum_dur_ns.saturating_add(r.total_dur_ns());
        if r.timed > 0 {
            t.min_dur_ns = t.min_dur_ns.min(r.timed_min_ns);
            t.max_dur_ns = t.max_dur_ns.max(r.timed_max_ns);
        }
        let untimed = r.untimed();
        if untimed > 0 {
            t.min_dur_ns = t.min_dur_ns.min(r.est_ns);
            t.max_dur_ns = t.max_dur_ns.max(r.est_ns);
            t.estimated_count += untimed;
            t.estimated_dur_ns = t.estimated_dur_ns.saturating_add(r.estimated_dur_ns());
            t.estimated_bounded += r.bounded.clamp(0, untimed);
            t.estimated_bound_ns = t.estimated_bound_ns.saturating_add(r.bound_ns.max(0));
        }
        t.sum_threads = t.sum_threads.saturating_add(r.threads);
        t.small_launches += r.small;
    }

    /// Calls counted in the kernel, none stored, in the bucket of the
    /// first: their exact count, time, bytes and extremes, the nested part
    /// apart.
    fn add_fold(&mut self, f: &crate::call_fold::CallFold) {
        let (key, dur, bytes) = Self::key_of(&Event::CallFold(*f));
        let n = f.count.max(1);
        let t = self.rows.entry(key).or_insert_with(AggTotals::empty);
        t.count += n;
        t.sum_dur_ns = t.sum_dur_ns.saturating_add(dur);
        t.min_dur_ns = t.min_dur_ns.min(f.min_dur_ns);
        t.max_dur_ns = t.max_dur_ns.max(f.max_dur_ns);
        t.sum_bytes = t.sum_bytes.saturating_add(bytes);
        t.sum_threads = t.sum_threads.saturating_add(f.threads.max(0));
        t.small_launches += f.small.max(0);
        if f.nested {
            let p = &mut t.nested;
            p.count += n;
            p.sum_dur_ns = p.sum_dur_ns.saturating_add(dur);
            p.sum_bytes = p.sum_bytes.saturating_add(bytes);
            p.sum_threads = p.sum_threads.saturating_add(f.threads.max(0));
            p.small_launches += f.small.max(0);
        }
    }

    /// Totals seen so far for `key` (before flushing).
    pub fn get(&self, key: &AggKey) -> Option<&AggTotals> {
        self.rows.get(key)
    }

    /// Takes all pending rows, leaving the aggregator empty.
    pub fn drain(&mut self) -> impl Iterator<Item = (AggKey, AggTotals)> + '_ {
        self.rows.drain()
    }

    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::CudaCall;

    fn launch(grid: [u32; 3], block: [u32; 3], nested: bool) -> Event {
        Event::Cuda(CudaCall {
            ts_ns: 5_000_000_123,
            pid: 1,
            tid: 1,
            op_id: 101,
            dur_ns: 10,
            copy_kind: -1,
            grid,
            block,
            nested,
            ..CudaCall::default()
        })
    }

    #[test]
    fn launches_count_their_threads_kept_or_not_and_nested_apart() {
        let mut a = Aggregator::default();
        a.add(&launch([4, 2, 1], [128, 1, 1], false), true);
        a.add(&launch([256, 1, 1], [256, 1, 1], true), false);
        a.add(&launch([257, 1, 1], [256, 1, 1], true), false);
        let (key, _, _) = Aggregator::key_of(&launch([1, 1, 1], [1, 1, 1], false));
        let t = a.get(&key).copied().expect("row");
        assert_eq!((t.count, t.stored), (3, 1));
        assert_eq!(t.sum_threads, 1024 + 65_536 + 257 * 256);
        // 65,536 threads is small (inclusive bound), 65,792 is not.
        assert_eq!(t.small_launches, 2);
        assert_eq!(
            t.nested,
            NestedPart {
                count: 2,
                sum_dur_ns: 20,
                sum_bytes: 0,
                sum_threads: 65_536 + 257 * 256,
                small_launches: 1,
            }
        );
    }

    #[test]
    fn calls_without_geometry_start_no_threads() {
        let mut a = Aggregator::default();
        let e = launch([0, 0, 0], [0, 0, 0], false);
        a.add(&e, true);
        let (key, _, _) = Aggregator::key_of(&e);
        let t = a.get(&key).copied().expect("row");
        assert_eq!((t.sum_threads, t.small_launches), (0, 0));
    }

    #[test]
    fn a_launch_run_counts_every_launch_as_estimated_and_stores_none() {
        let run = crate::model::LaunchRun {
            ts_ns: 5_000_000_000,
            last_ts_ns: 5_000_014_000,
            pid: 1,
            tid: 2,
            op_id: 101,
            count: 15,
            est_ns: 1_000,
            stream: 7,
            threads: 15 * 64,
            small: 15,
            timed: 0,
            timed_dur_ns: 0,
            timed_min_ns: 0,
            timed_max_ns: 0,
            bounded: 14,
            bound_ns: 14_000,
        };
        let mut a = Aggregator::default();
        a.add(&Event::LaunchRun(run), true);
        let (_, t) = a.drain().next().expect("one row");
        assert_eq!((t.count, t.stored, t.sum_dur_ns), (15, 0, 15_000));
        assert_eq!((t.estimated_count, t.estimated_dur_ns), (15, 15_000));
        // The last of the 15 had no next call within 50 us: unbounded.
        assert_eq!((t.estimated_bounded, t.estimated_bound_ns), (14, 14_000));
        assert_eq!(run.unbounded(), 1);
        assert_eq!((t.min_dur_ns, t.max_dur_ns), (1_000, 1_000));
        assert_eq!((t.sum_threads, t.small_launches), (960, 15));
        let at: Vec<i64> = run.spread().collect();
        assert_eq!(at.len(), 15);
        assert_eq!((at[0], at[14]), (run.ts_ns, run.last_ts_ns));
        assert_eq!(at[7], run.ts_ns + 7_000);
    }

    #[test]
    fn a_fold_counts_every_call_with_its_time_and_bytes_and_stores_none() {
        let fold = crate::call_fold::CallFold {
            ts_ns: 5_000_000_000,
            last_ts_ns: 5_000_900_000,
            last_end_ns: 5_000_902_000,
            pid: 1,
            tid: 2,
            op_id: 104,
            nested: true,
            stream: 7,
            count: 300,
            dur_ns: 600_000,
            min_dur_ns: 1_000,
            max_dur_ns: 9_000,
            bytes: 300 * 4096,
            threads: 0,
            small: 0,
        };
        let mut a = Aggregator::default();
        a.add(&Event::CallFold(fold), true);
        let (_, t) = a.drain().next().expect("one row");
        assert_eq!((t.count, t.stored, t.sum_dur_ns), (300, 0, 600_000));
        assert_eq!(
            (t.min_dur_ns, t.max_dur_ns, t.sum_bytes),
            (1_000, 9_000, 1_228_800)
        );
        assert_eq!(
            (t.nested.count, t.nested.sum_dur_ns, t.nested.sum_bytes),
            (300, 600_000, 1_228_800)
        );
        assert_eq!((t.estimated_count, t.sum_threads), (0, 0));
    }

    #[test]
    fn a_run_of_timed_launches_keeps_their_measured_total_and_extremes() {
        let run = crate::model::LaunchRun {
            ts_ns: 5_000_000_000,
            last_ts_ns: 5_000_090_000,
            pid: 1,
            tid: 2,
            op_id: 101,
            count: 10,
            est_ns: 0,
            stream: 7,
            threads: 10 * 64,
            small: 10,
            timed: 10,
            timed_dur_ns: 31_000,
            timed_min_ns: 2_000,
            timed_max_ns: 9_000,
            bounded: 0,
            bound_ns: 0,
        };
        let mut a = Aggregator::default();
        a.add(&Event::LaunchRun(run), true);
        let (_, t) = a.drain().next().expect("one row");
        assert_eq!((t.count, t.stored, t.sum_dur_ns), (10, 0, 31_000));
        assert_eq!((t.estimated_count, t.estimated_dur_ns), (0, 0));
        assert_eq!((t.min_dur_ns, t.max_dur_ns), (2_000, 9_000));
        assert_eq!(run.mean_dur_ns(), 3_100);
    }
}
