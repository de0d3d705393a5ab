//! One link of a causal chain, from system state down to the CUDA call.

use serde::Serialize;

/// One link of the chain, from system state down to the CUDA call.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChainStep {
    /// `SYSTEM`, `HOST`, `CUDA` or `GPU` (the GPU's own NVML samples, or
    /// the host-side bound on them).
    pub layer: String,
    /// What happened at that layer.
    pub detail: String,
}

/// A chain step.
pub(crate) fn step(layer: &str, detail: String) -> ChainStep {
    ChainStep {
        layer: layer.to_string(),
        detail,
    }
}
