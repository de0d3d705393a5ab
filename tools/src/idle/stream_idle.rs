//! The CUDA calls of one stream of a process.

use serde::Serialize;

/// CUDA calls of one stream (raw rows, outer calls).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StreamIdle {
    /// Stream handle (0 = default or unknown).
    pub stream: i64,
    /// Raw rows of outer calls on it.
    pub calls: i64,
    /// Time inside those calls, ns.
    pub api_ns: i64,
}
