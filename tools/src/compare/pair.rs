//! One figure of both runs side by side: the building block of every
//! comparison table, so each table says "before, after, change" the same way.

use serde::Serialize;

/// A figure in the baseline and in the new run, and how it moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Pair {
    /// Value in the baseline run (`None`: not known there).
    pub base: Option<f64>,
    /// Value in the new run (`None`: not known there).
    pub new: Option<f64>,
    /// `new - base`, when both are known.
    pub change: Option<f64>,
}

impl Pair {
    /// Both values, with their difference where both are known.
    pub fn of(base: Option<f64>, new: Option<f64>) -> Pair {
        let change = match (base, new) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        };
        Pair { base, new, change }
    }

    /// Both values known.
    pub fn known(base: f64, new: f64) -> Pair {
        Pair::of(Some(base), Some(new))
    }

    /// True when the figure did not move at all (both known and equal, or
    /// both unknown).
    pub fn unchanged(&self) -> bool {
        match (self.base, self.new) {
            (Some(a), Some(b)) => a == b,
            (None, None) => true,
            _ => false,
        }
    }
}

/// Whether something (a finding, an op, a process group, a code path)
/// appears in one run or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// In both runs.
    Both,
    /// In the baseline only: the new run no longer shows it.
    Gone,
    /// In the new run only.
    New,
}

impl Presence {
    /// The presence of something found (or not) in each run.
    pub fn of(in_base: bool, in_new: bool) -> Option<Presence> {
        match (in_base, in_new) {
            (true, true) => Some(Presence::Both),
            (true, false) => Some(Presence::Gone),
            (false, true) => Some(Presence::New),
            (false, false) => None,
        }
    }

    /// Lower-case label.
    pub fn label(self) -> &'static str {
        match self {
            Presence::Both => "both",
            Presence::Gone => "gone",
            Presence::New => "new",
        }
    }
}

/// `part / whole`, `None` when the whole is not positive.
pub fn ratio(part: f64, whole: f64) -> Option<f64> {
    (whole > 0.0).then(|| part / whole)
}
