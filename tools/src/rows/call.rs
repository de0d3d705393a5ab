//! One raw CUDA call as the analyses hold it in memory.

use ingero_store::catalog::copy_kind;

/// One raw CUDA call, compacted for in-memory analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// Entry time, epoch ns.
    pub ts_ns: i64,
    /// Time inside the call.
    pub dur_ns: i64,
    /// Bytes copied or allocated.
    pub bytes: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Op id.
    pub op_id: u16,
    /// `cudaMemcpyKind`, -1 when not a copy.
    pub copy_kind: i8,
    /// Stream handle, 0 for the default stream or when unknown.
    pub stream: i64,
    /// True for a driver-API call made inside a runtime-API call of the same
    /// thread (`cuLaunchKernel` inside `cudaLaunchKernel`): the same work,
    /// counted once by analyses that count operations. Read from the
    /// capture's own flag; inferred from time containment only for files
    /// that did not record it.
    pub nested: bool,
    /// Threads a kernel launch started (grid x block), 0 otherwise or unknown.
    pub threads: i64,
    /// True when `dur_ns` was not measured but estimated (sampled launch
    /// timing: the thread's recent mean of its timed launches).
    pub estimated: bool,
}

impl Call {
    /// Stream the call was made on (0 = default or unknown).
    pub fn stream_key(&self) -> i64 {
        self.stream
    }

    /// True for host-to-device copies (or copies whose direction is unknown).
    pub fn is_upload(&self) -> bool {
        self.copy_kind as i64 == copy_kind::HOST_TO_DEVICE
            || self.copy_kind as i64 == copy_kind::DEFAULT
    }
}
