//! Builds a detector's finding: the helpers every detector shares, apart
//! from the runner that calls the detectors.

use super::context::Context;
use crate::finding::{CausalChain, Cause, ChainStep, Evidence, Severity};

/// Builds a chain with its severity derived from the score.
#[allow(clippy::too_many_arguments)]
pub(crate) fn chain(
    ctx: &Context,
    cause: Cause,
    score: f64,
    summary: String,
    root_cause: String,
    steps: Vec<ChainStep>,
    evidence: Vec<Evidence>,
    affected_ops: Vec<String>,
    culprit_pids: Vec<i32>,
    span_ns: (i64, i64),
    fix: &str,
) -> CausalChain {
    let score = score.clamp(0.0, 100.0);
    let start = ctx.ds.span.start_ns;
    CausalChain {
        id: String::new(),
        cause,
        severity: Severity::from_score(score),
        score,
        explained_ns: 0,
        explained_share: 0.0,
        summary,
        root_cause,
        steps,
        evidence,
        affected_ops,
        victim_pid: ctx.main,
        culprit_pids,
        start_offset_s: ((span_ns.0 - start) as f64 / 1e9).max(0.0),
        end_offset_s: ((span_ns.1 - start) as f64 / 1e9).max(0.0),
        fix: fix.to_string(),
        code: Vec::new(),
        part: None,
        loop_cost_ns: 0,
    }
}

/// Impact points (0-40) for a share of wall time lost.
pub(crate) fn impact_points(share: f64) -> f64 {
    40.0 * (share * 4.0).clamp(0.0, 1.0)
}
