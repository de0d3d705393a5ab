//! What the stack samplers did and what they cost: the `stacks` part of
//! the capture status.

use serde::Serialize;

/// Counters of the stack samplers, shown in the capture status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StackStatus {
    /// On-CPU sampling rate (0 = off).
    pub hz: u32,
    /// CPUs with a sampling perf event.
    pub cpus: u32,
    /// On-CPU native samples resolved.
    pub on_cpu: u64,
    /// Off-CPU native samples resolved.
    pub off_cpu: u64,
    /// User stacks that could not be walked (recorded with no user frames).
    pub user_unwalked: u64,
    /// Native frames named.
    pub frames_resolved: u64,
    /// Native frames left as addresses.
    pub frames_unresolved: u64,
    /// CPU time the symboliser thread used, ns.
    pub symbolize_cpu_ns: u64,
    /// Python samples (one per thread per round).
    pub python: u64,
    /// Python processes the sampler attached to (over the whole capture).
    pub python_processes: u32,
    /// Sampling rounds that failed (a process read mid-update, or gone).
    pub python_errors: u64,
    /// CPU time the Python sampler thread used, ns.
    pub python_cpu_ns: u64,
    /// Why Python sampling is off or what it could not do, when it says.
    pub python_note: String,
}
