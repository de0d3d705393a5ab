//! One aggregate row: the totals of a bucket for a pid and an op or host
//! kind.

use ingero_store::AggSource;

/// One aggregate row (totals for a bucket, a pid and an op or host kind).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AggRow {
    /// Bucket start, epoch ns.
    pub bucket_ns: i64,
    /// Process id.
    pub pid: i32,
    /// CUDA or host.
    pub source: AggSource,
    /// Op id or host kind id.
    pub code: i64,
    /// Events counted.
    pub count: i64,
    /// Of which stored as raw rows.
    pub stored: i64,
    /// Sum of durations.
    pub sum_dur_ns: i64,
    /// Largest duration.
    pub max_dur_ns: i64,
    /// Sum of bytes.
    pub sum_bytes: i64,
    /// Of `count`, calls nested in another call of their thread (the driver
    /// half of a runtime call, [`ingero_store::nesting`]).
    pub nested_count: i64,
    /// Of `sum_dur_ns`, the nested calls' time.
    pub nested_dur_ns: i64,
    /// Of `sum_bytes`, the nested calls' bytes.
    pub nested_bytes: i64,
    /// Threads launched (grid x block summed over launches).
    pub sum_threads: i64,
    /// Launches of at most [`ingero_store::schema::SMALL_LAUNCH_THREADS`] threads.
    pub small_launches: i64,
    /// Of `small_launches`, nested ones.
    pub nested_small_launches: i64,
    /// Of `count`, launches not timed (sampled launch timing): their
    /// duration in `sum_dur_ns` is an estimate.
    pub estimated_count: i64,
    /// Of those, the ones proven shorter than 50 us by their thread's next
    /// call; the rest may have been slow.
    pub estimated_bounded: i64,
    /// Summed bounds of the proven ones, ns (an upper bound of their time).
    pub estimated_bound_ns: i64,
}

impl AggRow {
    /// Outer calls counted (each logical call once).
    pub fn outer_count(&self) -> i64 {
        self.count - self.nested_count
    }

    /// Time of the outer calls, ns.
    pub fn outer_dur_ns(&self) -> i64 {
        self.sum_dur_ns - self.nested_dur_ns
    }
}
