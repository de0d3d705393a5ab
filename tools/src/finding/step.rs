//! One link of a causal chain, from system state down to the CUDA call.

use serde::Serialize;

/// Where in the stack a link of a chain was seen: a closed set, in the order
/// a chain reads (system state, the host and its code, the CUDA call, the GPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Layer {
    /// The machine: CPU load, memory, other processes.
    System,
    /// The job's host threads and processes.
    Host,
    /// The code a thread was in, from its stack samples.
    Code,
    /// The CUDA calls.
    Cuda,
    /// The GPU's own NVML samples, or the host-side bound on them.
    Gpu,
}

impl Layer {
    /// The upper-case name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::System => "SYSTEM",
            Layer::Host => "HOST",
            Layer::Code => "CODE",
            Layer::Cuda => "CUDA",
            Layer::Gpu => "GPU",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One link of the chain, from system state down to the CUDA call.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct ChainStep {
    /// Where it was seen.
    pub layer: Layer,
    /// What happened at that layer.
    pub detail: String,
}

/// A chain step.
pub(crate) fn step(layer: Layer, detail: String) -> ChainStep {
    ChainStep { layer, detail }
}
