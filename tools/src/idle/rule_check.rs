//! One check of the usual GPU-profiling rule sets, evaluated on a trace.

use serde::Serialize;

/// One check from the usual GPU-profiling rule sets, evaluated on this trace.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RuleCheck {
    /// Rule name (`gpu_gaps`, `gpu_time_utilization`, `pageable_async_copies`,
    /// `synchronous_operations`, `launch_statistics`).
    pub rule: String,
    /// The rule's name for a reader ("Idle gaps of 500 ms or more").
    pub title: String,
    /// True when the trace shows the problem the rule looks for.
    pub triggered: bool,
    /// The figures behind the verdict.
    pub detail: String,
}
