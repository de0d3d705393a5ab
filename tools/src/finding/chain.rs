//! A diagnosed cause of GPU starvation: the finding itself.

use super::cause::Cause;
use super::evidence::Evidence;
use super::severity::Severity;
use super::step::ChainStep;
use serde::Serialize;

/// A diagnosed cause of GPU starvation.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CausalChain {
    /// Stable id within the report (`chain-1` is the top one).
    pub id: String,
    /// Mechanism blamed.
    pub cause: Cause,
    /// Urgency: from the idle time the finding explains (or the loop time it
    /// costs), as a share of the loop's idle time; never higher on a finding
    /// ranked below another.
    pub severity: Severity,
    /// How strongly the evidence matches the mechanism, 0-100 (a confidence,
    /// not a cost: findings rank by the time they explain).
    pub score: f64,
    /// GPU idle time of the victim process this finding accounts for, ns;
    /// no two findings count the same stretch (see `explained`).
    pub explained_ns: i64,
    /// `explained_ns` as a share of the victim's whole GPU idle time.
    pub explained_share: f64,
    /// One line: symptom <- cause.
    pub summary: String,
    /// The root cause in one sentence.
    pub root_cause: String,
    /// Links from system state to the CUDA call.
    pub steps: Vec<ChainStep>,
    /// Numbers behind the diagnosis.
    pub evidence: Vec<Evidence>,
    /// CUDA functions affected.
    pub affected_ops: Vec<String>,
    /// The GPU-driving process that suffers.
    pub victim_pid: Option<i32>,
    /// Processes causing it.
    pub culprit_pids: Vec<i32>,
    /// Seconds after capture start where the evidence concentrates.
    pub start_offset_s: f64,
    /// End of that stretch, seconds after capture start.
    pub end_offset_s: f64,
    /// The concrete change to make.
    pub fix: String,
    /// The code the GPU thread was in during the idle time this finding
    /// explains, largest first (empty without stack samples).
    pub code: Vec<crate::code::CodeShare>,
    /// For a finding named by its code: the part of the idle split it
    /// explains (`off_cpu_blocked`, `host_compute`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// Time the finding costs the loop beyond the idle time it explains, ns
    /// (time in the allocator, copies slower than pinned ones would be):
    /// what it ranks by when it explains no idle time; 0 for most findings.
    #[serde(skip_serializing_if = "is_zero")]
    pub loop_cost_ns: i64,
}

impl CausalChain {
    /// The loop time the finding costs, when that exceeds the idle time it
    /// explains (it then ranks by it): what a reader must be told beside
    /// its idle share.
    pub fn loop_cost_beyond_idle(&self) -> Option<i64> {
        (self.loop_cost_ns > self.explained_ns).then_some(self.loop_cost_ns)
    }
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}
