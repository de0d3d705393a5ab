//! The one-sentence answer to "did the fix work?": which finding the change
//! removed or reduced, what leads now, and how sure that is, judged against
//! the spread each run shows on its own.

use super::findings::FindingChange;
use super::idle::IdleComparison;
use super::noise::Significance;
use super::pair::Presence;
use crate::format::pct;
use serde::Serialize;

/// Which way the runs moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Nothing moved: the same figures in both runs.
    NoChange,
    /// The GPU idles less, by more than the runs' spread.
    Better,
    /// The GPU idles more, by more than the runs' spread.
    Worse,
    /// The idle share moved less than the runs' own spread.
    WithinNoise,
    /// No GPU-driving process in one of the runs: nothing to compare.
    NotComparable,
}

/// How far the data supports the outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// The change is three times the noise band or more (or nothing changed).
    High,
    /// Outside the noise band, less than three times it.
    Medium,
    /// Inside the band, or the files show no spread to judge by.
    Low,
}

/// The answer, in one sentence and in parts.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Verdict {
    /// One sentence: the outcome, the finding removed or reduced, what now
    /// leads, and the confidence.
    pub sentence: String,
    /// Which way the runs moved.
    pub outcome: Outcome,
    /// How far the data supports it.
    pub confidence: Confidence,
    /// The finding whose explained idle time fell most (key), if any fell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reduced: Option<String>,
    /// The finding that explains most idle time in the new run (key).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leads_now: Option<String>,
    /// The idle-share change over the noise band, where both are known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_over_band: Option<f64>,
}

/// The finding explaining most idle time in the new run, and in the base.
fn leader(findings: &[FindingChange], new: bool) -> Option<&FindingChange> {
    let of = |f: &FindingChange| {
        if new {
            f.explained_ns.new.unwrap_or(0.0)
        } else {
            f.explained_ns.base.unwrap_or(0.0)
        }
    };
    findings
        .iter()
        .filter(|f| of(f) > 0.0)
        .max_by(|a, b| of(a).total_cmp(&of(b)))
}

/// How a finding moved, in words.
fn moved(f: &FindingChange) -> String {
    let (a, b) = (
        f.per_loop_s.base.unwrap_or(0.0),
        f.per_loop_s.new.unwrap_or(0.0),
    );
    let how = match f.presence {
        Presence::Gone => "is gone",
        Presence::New => "is new",
        Presence::Both if b < a => "is reduced",
        Presence::Both => "grew",
    };
    format!(
        "{} {how} ({} -> {} of the loop's time)",
        f.label(),
        pct(a),
        pct(b)
    )
}

/// The verdict from the idle comparison and the matched findings.
pub fn verdict(idle: &IdleComparison, findings: &[FindingChange], same: bool) -> Verdict {
    let lead = leader(findings, true);
    let lead_text = lead.map_or_else(
        || "no finding explains idle time".to_string(),
        |f| {
            format!(
                "{} leads ({} of the loop's time)",
                f.label(),
                pct(f.per_loop_s.new.unwrap_or(0.0))
            )
        },
    );
    let leads_now = lead.map(|f| f.key.clone());
    let (Some(a), Some(b)) = (idle.loop_idle_share.base, idle.loop_idle_share.new) else {
        return Verdict {
            sentence: "Not comparable: one of the runs has no GPU-driving process in its window."
                .to_string(),
            outcome: Outcome::NotComparable,
            confidence: Confidence::Low,
            reduced: None,
            leads_now,
            change_over_band: None,
        };
    };
    let change = b - a;
    let over = idle
        .noise_band
        .filter(|w| *w > 0.0)
        .map(|w| change.abs() / w);
    let band_text = idle.noise_band.map_or_else(
        || "the files show no spread to judge by".to_string(),
        |w| format!("run-to-run spread +/-{} points", fmt_points(w)),
    );
    let idle_text = format!("GPU idle {} -> {} of the loop", pct(a), pct(b));
    if same || (change == 0.0 && findings.iter().all(|f| f.per_loop_s.unchanged())) {
        return Verdict {
            sentence: format!(
                "No change: {idle_text}, the same findings explain the same idle time, and {lead_text}."
            ),
            outcome: Outcome::NoChange,
            confidence: Confidence::High,
            reduced: None,
            leads_now,
            change_over_band: over,
        };
    }
    let confidence = match idle.significance {
        Significance::Clear => Confidence::High,
        Significance::Moderate => Confidence::Medium,
        _ => Confidence::Low,
    };
    let confidence_text = match (confidence, over) {
        (Confidence::Low, _) | (_, None) => format!("confidence low ({band_text})"),
        (c, Some(x)) => format!(
            "confidence {} (the change is {x:.1}x the noise band; {band_text})",
            if c == Confidence::High {
                "high"
            } else {
                "medium"
            }
        ),
    };
    let drop = findings
        .iter()
        .filter(|f| f.per_loop_s.change.is_some_and(|c| c < 0.0))
        .min_by(|x, y| {
            let c = |f: &FindingChange| f.per_loop_s.change.unwrap_or(0.0);
            c(x).total_cmp(&c(y))
        });
    let rise = findings
        .iter()
        .filter(|f| f.per_loop_s.change.is_some_and(|c| c > 0.0))
        .max_by(|x, y| {
            let c = |f: &FindingChange| f.per_loop_s.change.unwrap_or(0.0);
            c(x).total_cmp(&c(y))
        });
    let (outcome, sentence) = if matches!(
        idle.significance,
        Significance::WithinNoise | Significance::None
    ) {
        // The total may hold while the time moves from one finding to another.
        let shifted = drop
            .filter(|f| matches!(f.significance, Significance::Moderate | Significance::Clear))
            .map_or(String::new(), |f| format!(", though {}", moved(f)));
        (
            Outcome::WithinNoise,
            format!(
                "Within noise: {idle_text}, a change inside the {band_text}{shifted}; {lead_text}; {confidence_text}."
            ),
        )
    } else if change < 0.0 {
        let what = drop.map_or_else(|| "no single finding fell".to_string(), moved);
        (
            Outcome::Better,
            format!("Better: {what}; {idle_text}; {lead_text} now; {confidence_text}."),
        )
    } else {
        let what = rise.map_or_else(|| "no single finding rose".to_string(), moved);
        (
            Outcome::Worse,
            format!("Worse: {idle_text}; {what}; {lead_text} now; {confidence_text}."),
        )
    };
    Verdict {
        sentence,
        outcome,
        confidence,
        reduced: drop.map(|f| f.key.clone()),
        leads_now,
        change_over_band: over,
    }
}

/// A share as percentage points with two decimals.
fn fmt_points(share: f64) -> String {
    format!("{:.2}", share * 100.0)
}
