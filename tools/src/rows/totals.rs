//! Totals summed over aggregate rows.

use super::agg_row::AggRow;

/// Totals summed over aggregate rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Events counted.
    pub count: i64,
    /// Raw rows kept.
    pub stored: i64,
    /// Sum of durations.
    pub sum_dur_ns: i64,
    /// Largest duration.
    pub max_dur_ns: i64,
    /// Sum of bytes.
    pub sum_bytes: i64,
    /// Launches not timed (sampled launch timing), durations estimated.
    pub estimated_count: i64,
    /// Of those, the ones proven shorter than 50 us.
    pub estimated_bounded: i64,
    /// Summed bounds of the proven ones, ns.
    pub estimated_bound_ns: i64,
}

impl Totals {
    /// Untimed launches not proven short: their duration is unknown.
    pub fn unbounded(&self) -> i64 {
        (self.estimated_count - self.estimated_bounded).max(0)
    }

    pub(crate) fn add(&mut self, a: &AggRow) {
        self.estimated_count += a.estimated_count;
        self.estimated_bounded += a.estimated_bounded;
        self.estimated_bound_ns = self.estimated_bound_ns.saturating_add(a.estimated_bound_ns);
        self.count += a.count;
        self.stored += a.stored;
        self.sum_dur_ns = self.sum_dur_ns.saturating_add(a.sum_dur_ns);
        self.max_dur_ns = self.max_dur_ns.max(a.max_dur_ns);
        self.sum_bytes = self.sum_bytes.saturating_add(a.sum_bytes);
    }

    /// Mean duration, when anything was counted.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_dur_ns as f64 / self.count as f64)
    }
}
