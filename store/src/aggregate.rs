//! Per-second totals kept for every event, so long captures can drop raw rows
//! without losing counts, sums and extremes.

use crate::catalog::AggSource;
use crate::model::Event;
use crate::schema::AGGREGATE_BUCKET_NS;
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
    /// Of those, events kept as raw rows.
    pub stored: i64,
    /// Sum of durations.
    pub sum_dur_ns: i64,
    /// Smallest duration.
    pub min_dur_ns: i64,
    /// Largest duration.
    pub max_dur_ns: i64,
    /// Sum of bytes (copies, allocations, page allocations).
    pub sum_bytes: i64,
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
        let (key, dur, bytes) = Self::key_of(event);
        let t = self.rows.entry(key).or_insert(AggTotals {
            count: 0,
            stored: 0,
            sum_dur_ns: 0,
            min_dur_ns: i64::MAX,
            max_dur_ns: i64::MIN,
            sum_bytes: 0,
        });
        t.count += 1;
        t.stored += stored as i64;
        t.sum_dur_ns = t.sum_dur_ns.saturating_add(dur);
        t.min_dur_ns = t.min_dur_ns.min(dur);
        t.max_dur_ns = t.max_dur_ns.max(dur);
        t.sum_bytes = t.sum_bytes.saturating_add(bytes);
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
