//! Time windows relative to the end of a capture, so saved databases stay
//! meaningful long after they were recorded.

use crate::error::{Result, StoreError};
use serde::{Deserialize, Serialize};

/// First and last instants of a capture, ns since the epoch (decimal
/// strings in JSON, see [`crate::epoch_ns`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CaptureSpan {
    /// Earliest recorded instant, epoch ns as a decimal string (exact).
    #[serde(with = "crate::epoch_ns")]
    #[schemars(with = "crate::epoch_ns::EpochNsText")]
    pub start_ns: i64,
    /// Latest recorded instant (capture stop, or last event if later), epoch
    /// ns as a decimal string (exact).
    #[serde(with = "crate::epoch_ns")]
    #[schemars(with = "crate::epoch_ns::EpochNsText")]
    pub end_ns: i64,
}

impl CaptureSpan {
    /// Length of the capture in nanoseconds (never negative).
    pub fn duration_ns(&self) -> i64 {
        (self.end_ns - self.start_ns).max(0)
    }
}

/// A window such as "the last 30 s" or "from 5 min before the end to 1 min before the end".
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct TimeWindow {
    /// Keep events no older than this many ns before the capture end.
    pub since_ns: Option<i64>,
    /// Keep events at least this many ns before the capture end.
    pub until_ns: Option<i64>,
}

/// A window resolved against a capture: inclusive bounds in epoch ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ResolvedWindow {
    /// Lower bound (inclusive).
    pub lo_ns: i64,
    /// Upper bound (inclusive).
    pub hi_ns: i64,
}

impl ResolvedWindow {
    /// Length of the window in ns.
    pub fn duration_ns(&self) -> i64 {
        (self.hi_ns - self.lo_ns).max(0)
    }

    /// True when `ts` falls inside the window.
    pub fn contains(&self, ts: i64) -> bool {
        ts >= self.lo_ns && ts <= self.hi_ns
    }
}

impl TimeWindow {
    /// The whole capture.
    pub const ALL: TimeWindow = TimeWindow {
        since_ns: None,
        until_ns: None,
    };

    /// Builds a window from optional user strings such as `"30s"`.
    pub fn parse(since: Option<&str>, until: Option<&str>) -> Result<TimeWindow> {
        Ok(TimeWindow {
            since_ns: since.map(parse_duration_ns).transpose()?,
            until_ns: until.map(parse_duration_ns).transpose()?,
        })
    }

    /// Turns the relative window into absolute bounds inside `span`.
    pub fn resolve(&self, span: CaptureSpan) -> ResolvedWindow {
        let lo = match self.since_ns {
            Some(d) => (span.end_ns - d).max(span.start_ns),
            None => span.start_ns,
        };
        let hi = match self.until_ns {
            Some(d) => (span.end_ns - d).max(span.start_ns),
            None => span.end_ns,
        };
        ResolvedWindow {
            lo_ns: lo.min(hi),
            hi_ns: hi,
        }
    }
}

/// Parses `250ms`, `30s`, `5m`, `1h`, `1h30m`, `1.5s` or a bare number of seconds.
pub fn parse_duration_ns(text: &str) -> Result<i64> {
    let bad = || StoreError::BadDuration(text.to_string());
    let s = text.trim();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return to_ns(secs, 1e9).ok_or_else(bad);
    }
    let mut total: f64 = 0.0;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        if num_end == 0 {
            return Err(bad());
        }
        let value: f64 = rest[..num_end].parse().map_err(|_| bad())?;
        let after = &rest[num_end..];
        let unit_end = after
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(after.len());
        let scale = match &after[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" => 1e3,
            "ms" => 1e6,
            "s" | "sec" => 1e9,
            "m" | "min" => 60e9,
            "h" => 3600e9,
            "d" => 86400e9,
            _ => return Err(bad()),
        };
        total += value * scale;
        rest = &after[unit_end..];
    }
    to_ns(total, 1.0).ok_or_else(bad)
}

fn to_ns(value: f64, scale: f64) -> Option<i64> {
    let ns = value * scale;
    (ns.is_finite() && ns >= 0.0 && ns < i64::MAX as f64).then_some(ns as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration_ns("250ms").ok(), Some(250_000_000));
        assert_eq!(parse_duration_ns("1h30m").ok(), Some(5_400_000_000_000));
        assert_eq!(parse_duration_ns("2").ok(), Some(2_000_000_000));
        assert_eq!(parse_duration_ns("1.5s").ok(), Some(1_500_000_000));
        assert!(parse_duration_ns("abc").is_err());
        assert!(parse_duration_ns("5 parsecs").is_err());
        assert!(parse_duration_ns("-3s").is_err());
    }

    #[test]
    fn a_huge_bad_duration_is_quoted_in_part() {
        let huge = "y".repeat(900_000);
        let message = parse_duration_ns(&huge)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.len() < 300, "{} bytes", message.len());
        assert!(message.contains("…\" (900,000 bytes)"), "{message}");
        assert!(message.contains("use a number with a unit"), "{message}");
    }

    #[test]
    fn window_is_relative_to_capture_end() {
        let span = CaptureSpan {
            start_ns: 1_000,
            end_ns: 101_000,
        };
        let w = TimeWindow {
            since_ns: Some(10_000),
            until_ns: Some(1_000),
        };
        let r = w.resolve(span);
        assert_eq!((r.lo_ns, r.hi_ns), (91_000, 100_000));
        let clamp = TimeWindow {
            since_ns: Some(1_000_000),
            until_ns: None,
        }
        .resolve(span);
        assert_eq!(clamp.lo_ns, 1_000);
    }
}
