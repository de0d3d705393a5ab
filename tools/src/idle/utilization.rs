//! GPU time utilisation over equal chunks of a process's lifetime.

use serde::Serialize;

/// Chunks the lifetime is cut into for the utilisation rule.
pub const UTILIZATION_CHUNKS: usize = 30;
/// A chunk below this busy share counts as under-utilised.
pub const UTILIZATION_LOW: f64 = 0.5;

/// GPU time utilisation over equal chunks of the lifetime.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Utilization {
    /// Number of chunks.
    pub chunks: usize,
    /// Chunks whose busy share is under 50%.
    pub low_chunks: usize,
    /// Busy share per chunk, 0-1.
    pub busy_share: Vec<f64>,
    /// What busy means here: "NVML samples" or "host-side upper bound".
    pub basis: String,
}
