//! One long stretch with no GPU work, as the gap list reports it.

use serde::Serialize;

/// Idle gaps at least this long are listed (Nsight's "GPU gaps" rule).
pub const GAP_THRESHOLD_NS: i64 = 500_000_000;

/// One idle gap.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IdleGap {
    /// Start, seconds after the capture began.
    pub start_offset_s: f64,
    /// Length, ns.
    pub dur_ns: i64,
}
