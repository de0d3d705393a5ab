//! How urgent a finding is, derived from its score.

use serde::Serialize;

/// How urgent a chain is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    /// Worth knowing.
    Low,
    /// Costs measurable time.
    Medium,
    /// The main reason the GPU waits.
    High,
}

impl Severity {
    /// Severity for a chain score.
    pub fn from_score(score: f64) -> Severity {
        if score >= 60.0 {
            Severity::High
        } else if score >= 35.0 {
            Severity::Medium
        } else {
            Severity::Low
        }
    }

    /// Upper-case label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Low => "LOW",
            Severity::Medium => "MEDIUM",
            Severity::High => "HIGH",
        }
    }
}
