//! The units evidence is measured in: a closed set, so every reader (the
//! readable text of the MCP tools, the report, exports) handles each one and
//! none falls through to a raw number.

use crate::format;
use serde::{Deserialize, Serialize};

/// What an evidence value counts. Serialised as the short names the JSON
/// output has always used (`ns`, `count/s`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum Unit {
    /// A duration in nanoseconds.
    #[serde(rename = "ns")]
    Ns,
    /// A duration in seconds.
    #[serde(rename = "s")]
    Seconds,
    /// A number of events, calls or items.
    #[serde(rename = "count")]
    Count,
    /// Events per second.
    #[serde(rename = "count/s")]
    CountPerSec,
    /// A size in bytes.
    #[serde(rename = "bytes")]
    Bytes,
    /// A rate in bytes per second.
    #[serde(rename = "bytes/s")]
    BytesPerSec,
    /// A share already in percent (0-100).
    #[serde(rename = "percent")]
    Percent,
    /// A ratio of two like quantities (`3.2x`).
    #[serde(rename = "ratio")]
    Ratio,
}

impl Unit {
    /// The short name, as serialised.
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Seconds => "s",
            Unit::Count => "count",
            Unit::CountPerSec => "count/s",
            Unit::Bytes => "bytes",
            Unit::BytesPerSec => "bytes/s",
            Unit::Percent => "percent",
            Unit::Ratio => "ratio",
        }
    }

    /// `x` in this unit as a person would write it (`1.25 s`, `3.0 GiB`,
    /// `12.5 GB/s`, `4,096/s`).
    pub fn readable(self, x: f64) -> String {
        match self {
            Unit::Ns => format::ns(x.round() as i64),
            Unit::Seconds => format::ns((x * 1e9).round() as i64),
            Unit::Count => format::count(x.round() as i64),
            Unit::CountPerSec => format!("{}/s", format::count(x.round() as i64)),
            Unit::Bytes => format::bytes(x.round() as i64),
            Unit::BytesPerSec => format!("{:.1} GB/s", x / 1e9),
            Unit::Percent => format!("{x:.1}%"),
            Unit::Ratio => format!("{x:.2}x"),
        }
    }
}

impl std::fmt::Display for Unit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_unit_serialises_to_its_short_name_and_reads_with_its_unit() {
        let all = [
            (Unit::Ns, 1.5e9, "1.50 s"),
            (Unit::Seconds, 2.0, "2.00 s"),
            (Unit::Count, 49656.0, "49,656"),
            (Unit::CountPerSec, 8046.4, "8,046/s"),
            (Unit::Bytes, 1024.0, "1.0 KiB"),
            (Unit::BytesPerSec, 7.3e9, "7.3 GB/s"),
            (Unit::Percent, 99.06, "99.1%"),
            (Unit::Ratio, 0.99, "0.99x"),
        ];
        for (u, x, text) in all {
            let json = serde_json::to_value(u).expect("json");
            assert_eq!(json, u.as_str(), "{u:?}");
            assert_eq!(u.readable(x), text, "{u:?}");
        }
    }
}
