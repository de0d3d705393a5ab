//! One raw host event the analyses need row by row.

use ingero_store::HostKind;

/// A raw host event kept individually.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRow {
    /// Event time, epoch ns.
    pub ts_ns: i64,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Kind.
    pub kind: HostKind,
    /// Duration (off-CPU time for switches).
    pub dur_ns: i64,
    /// Kind-specific argument.
    pub arg: i64,
}
