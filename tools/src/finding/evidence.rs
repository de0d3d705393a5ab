//! One number supporting a finding, with where it came from.

use super::Unit;
use serde::Serialize;

/// One number supporting a chain, with where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Evidence {
    /// What is measured.
    pub label: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
    /// Which data it was computed from.
    pub source: String,
}

impl Evidence {
    /// Builds an evidence item.
    pub fn new(label: impl Into<String>, value: f64, unit: Unit, source: &str) -> Evidence {
        Evidence {
            label: label.into(),
            value,
            unit,
            source: source.to_string(),
        }
    }
}
