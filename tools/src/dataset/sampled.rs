//! What a process's raw CUDA rows stand for when the capture kept only some of
//! them (`--sample N`, launch rows, or ops folded in the kernel).
//!
//! The aggregates count every call exactly, per time bucket, process and op;
//! the raw rows carry each kept call's arguments (bytes, copy kind). A count
//! that depends only on the op (synchronisations, synchronous copies) is the
//! aggregates' own figure; one that depends on a call's arguments (copies of a
//! few bytes back to the host) is the raw rows' share of the op scaled to the
//! aggregates' count. Both are read from the buckets that lie wholly inside
//! the window (as far as the capture spans them), so a bucket overhanging a
//! narrow window is not taken for dropped rows.

use super::Dataset;
use crate::rows::{AggRow, Call};
use ingero_store::AggSource;
use std::collections::BTreeMap;

/// One op's outer calls in one time bucket, as the raw rows and the
/// aggregates see them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct BucketRows {
    /// Outer raw rows.
    raw: i64,
    /// Their time, ns.
    raw_dur_ns: i64,
    /// Raw rows nested in another call of their thread (not counted: the
    /// outer call stands for the work).
    nested_raw: i64,
    /// Outer calls the aggregates counted (0 for a bucket overhanging the
    /// window: the raw rows speak alone there).
    counted: i64,
    /// Their time, ns.
    counted_dur_ns: i64,
}

impl BucketRows {
    /// True when the aggregates counted more calls than rows were kept.
    fn dropped(&self) -> bool {
        self.counted > self.raw
    }
}

/// Per op and time bucket, how many calls each kept raw row of one process
/// stands for.
#[derive(Debug, Clone, Default)]
pub struct SampledOps {
    bucket_ns: i64,
    by_op: BTreeMap<(u16, i64), BucketRows>,
}

impl SampledOps {
    /// Reads `pid`'s aggregates against its outer raw rows `calls`, for the
    /// ops `wanted` accepts (the others are not tracked: a capture's calls
    /// are many, and most readers need a few ops).
    pub fn of<'a>(
        ds: &Dataset,
        pid: i32,
        calls: impl IntoIterator<Item = &'a Call>,
        wanted: impl Fn(u16) -> bool,
    ) -> Self {
        let bucket_ns = ds.bucket_ns.max(1);
        let (lo, hi) = (ds.window.lo_ns, ds.window.hi_ns);
        // A bucket counts when the part of it the capture spans lies in the
        // window (the first and last buckets of a whole capture do).
        let (first, last) = (ds.span.start_ns, ds.span.end_ns);
        let inside = |start: i64| start.max(first) >= lo && (start + bucket_ns - 1).min(last) <= hi;
        let mut by_op: BTreeMap<(u16, i64), BucketRows> = BTreeMap::new();
        for a in ds.aggs.iter().filter(|a: &&AggRow| {
            a.source == AggSource::Cuda
                && a.pid == pid
                && inside(a.bucket_ns)
                && wanted(a.code as u16)
        }) {
            let e = by_op.entry((a.code as u16, a.bucket_ns)).or_default();
            e.counted += a.outer_count();
            e.counted_dur_ns += a.outer_dur_ns();
        }
        for c in calls
            .into_iter()
            .filter(|c| c.pid == pid && wanted(c.op_id))
        {
            let start = c.ts_ns - c.ts_ns.rem_euclid(bucket_ns);
            let e = by_op.entry((c.op_id, start)).or_default();
            if c.nested {
                e.nested_raw += 1;
            } else {
                e.raw += 1;
                e.raw_dur_ns += c.dur_ns;
            }
        }
        SampledOps { bucket_ns, by_op }
    }

    fn bucket_of(&self, c: &Call) -> Option<&BucketRows> {
        let start = c.ts_ns - c.ts_ns.rem_euclid(self.bucket_ns);
        self.by_op.get(&(c.op_id, start))
    }

    fn buckets(&self, op: u16) -> impl Iterator<Item = &BucketRows> {
        self.by_op
            .range((op, i64::MIN)..=(op, i64::MAX))
            .map(|(_, r)| r)
    }

    /// Calls the outer raw row `c` stands for: 1 where every call of its op
    /// and bucket kept its row (or the file has no aggregates for them), more
    /// where rows were dropped.
    pub fn weight(&self, c: &Call) -> f64 {
        match self.bucket_of(c) {
            Some(r) if r.raw > 0 && r.dropped() => r.counted as f64 / r.raw as f64,
            _ => 1.0,
        }
    }

    /// True when `c`'s op dropped rows in its bucket (its row is one of a sample).
    pub fn sampled(&self, c: &Call) -> bool {
        self.weight(c) > 1.0
    }

    /// The ops tracked that have outer calls, each once: those with outer
    /// raw rows, and those the aggregates alone count (every row dropped);
    /// not an op whose rows are all nested in another call (a file that did
    /// not record nesting counts those in its aggregates as outer).
    pub fn ops(&self) -> impl Iterator<Item = u16> + '_ {
        let mut by_op: BTreeMap<u16, (i64, i64)> = BTreeMap::new();
        for (&(op, _), r) in &self.by_op {
            let e = by_op.entry(op).or_default();
            e.0 += r.raw;
            e.1 += r.nested_raw;
        }
        by_op
            .into_iter()
            .filter(|&(_, (outer, nested))| outer > 0 || nested == 0)
            .map(|(op, _)| op)
    }

    /// Outer calls of `op`: per bucket the aggregates' count where rows were
    /// dropped, else the raw rows.
    pub fn count(&self, op: u16) -> i64 {
        self.buckets(op).map(|r| r.raw.max(r.counted)).sum()
    }

    /// Time inside `op`'s outer calls, ns, taken per bucket as [`Self::count`].
    pub fn dur_ns(&self, op: u16) -> i64 {
        self.buckets(op)
            .map(|r| {
                if r.dropped() {
                    r.counted_dur_ns.max(r.raw_dur_ns)
                } else {
                    r.raw_dur_ns
                }
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(op: u16, ts_ns: i64) -> Call {
        Call {
            ts_ns,
            dur_ns: 10,
            bytes: 4,
            pid: 1,
            tid: 1,
            op_id: op,
            copy_kind: 2,
            stream: 0,
            nested: false,
            threads: 0,
            estimated: false,
        }
    }

    /// Bucket 0: 2 rows of 100 calls; bucket 1: 1 row, every call kept;
    /// bucket 2 overhangs the window (no count).
    fn ops() -> SampledOps {
        let mut by_op = BTreeMap::new();
        let rows = |raw, counted| BucketRows {
            raw,
            raw_dur_ns: 10 * raw,
            nested_raw: 0,
            counted,
            counted_dur_ns: 7 * counted,
        };
        by_op.insert((7, 0), rows(2, 100));
        by_op.insert((7, 1_000), rows(1, 1));
        by_op.insert((7, 2_000), rows(3, 0));
        SampledOps {
            bucket_ns: 1_000,
            by_op,
        }
    }

    #[test]
    fn a_row_stands_for_the_calls_its_bucket_counted() {
        let s = ops();
        assert_eq!(s.weight(&call(7, 10)), 50.0);
        assert!(s.sampled(&call(7, 999)));
        assert_eq!(s.weight(&call(7, 1_500)), 1.0);
        assert_eq!(s.weight(&call(7, 2_500)), 1.0);
        assert_eq!(s.weight(&call(8, 10)), 1.0);
    }

    #[test]
    fn counts_and_time_take_each_bucket_as_it_was_kept() {
        let s = ops();
        assert_eq!(s.count(7), 100 + 1 + 3);
        assert_eq!(s.dur_ns(7), 700 + 10 + 30);
        assert_eq!(s.count(8), 0);
        assert_eq!(s.ops().collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn an_op_seen_only_nested_is_not_an_op_of_its_own() {
        let mut s = ops();
        let nested = BucketRows {
            nested_raw: 4,
            counted: 4,
            ..BucketRows::default()
        };
        s.by_op.insert((9, 0), nested);
        let dropped = BucketRows {
            counted: 50,
            ..BucketRows::default()
        };
        s.by_op.insert((11, 0), dropped);
        assert_eq!(s.ops().collect::<Vec<_>>(), [7, 11]);
    }
}
