//! Records lost on the way from the kernel to the file, by cause.

use serde::Serialize;

/// Where records went missing, by cause.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LossBreakdown {
    /// Dropped in the kernel because the ring buffer was full (raise
    /// `--ring-size` or lower the event rate).
    pub ring_full: u64,
    /// Calls not timed because the kernel's in-flight call table was full.
    pub call_table_full: u64,
    /// Records user space could not decode.
    pub undecodable: u64,
    /// Process lifecycle notices dropped because the control queue was full.
    pub notices_dropped: u64,
    /// Events received but not written because the database failed.
    pub not_written: u64,
}

impl LossBreakdown {
    /// All causes together.
    pub fn total(&self) -> u64 {
        self.ring_full
            + self.call_table_full
            + self.undecodable
            + self.notices_dropped
            + self.not_written
    }
}
