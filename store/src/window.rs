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

/// Parses a duration as a model or a person writes it: `250ms`, `30s`,
/// `60 s`, `5m`, `1.5m`, `2 minutes`, `1 hour 30 minutes`, `1h30m`, ISO 8601
/// (`PT1M30S`), or a bare number of seconds (`60`, `1.5`).
pub fn parse_duration_ns(text: &str) -> Result<i64> {
    let bad = || StoreError::BadDuration(text.to_string());
    let s = text.trim().to_ascii_lowercase();
    if s.is_empty() {
        return Err(bad());
    }
    if let Ok(secs) = s.parse::<f64>() {
        return to_ns(secs, 1e9).ok_or_else(bad);
    }
    let total = match s.strip_prefix('p') {
        Some(iso) => iso_8601_ns(iso),
        None => worded_ns(&s),
    };
    total.and_then(|t| to_ns(t, 1.0)).ok_or_else(bad)
}

/// Sum of `<number><unit>` pairs, spaces allowed around each part
/// (`1h30m`, `1 hour, 30 minutes`); `None` when any part is not understood.
fn worded_ns(s: &str) -> Option<f64> {
    let mut total = 0.0;
    let mut pairs = 0;
    let mut rest = s.trim_start();
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let value: f64 = rest[..num_end].parse().ok()?;
        let after = rest[num_end..].trim_start();
        let unit_end = after
            .find(|c: char| !c.is_alphabetic())
            .unwrap_or(after.len());
        total += value * unit_scale(&after[..unit_end])?;
        pairs += 1;
        rest = after[unit_end..].trim_start_matches([' ', ',', '\t']);
        if let Some(more) = rest.strip_prefix("and ") {
            rest = more.trim_start();
        }
    }
    (pairs > 0).then_some(total)
}

/// Nanoseconds in one `unit` (`ms`, `sec`, `minutes`, `h`, ...).
fn unit_scale(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" | "nsec" | "nanosecond" | "nanoseconds" => 1.0,
        "us" | "µs" | "usec" | "microsecond" | "microseconds" => 1e3,
        "ms" | "msec" | "millisecond" | "milliseconds" => 1e6,
        "s" | "sec" | "secs" | "second" | "seconds" => 1e9,
        "m" | "min" | "mins" | "minute" | "minutes" => 60e9,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3600e9,
        "d" | "day" | "days" => 86400e9,
        _ => return None,
    })
}

/// The part of an ISO 8601 duration after `P` (lower-cased): `t1m30s`,
/// `1dt2h`; years, months and weeks are refused (their length varies).
fn iso_8601_ns(iso: &str) -> Option<f64> {
    let (days, time) = match iso.split_once('t') {
        Some((d, t)) => (d, Some(t)),
        None => (iso, None),
    };
    let mut total = 0.0;
    let mut parts = 0;
    let mut read = |text: &str, units: &[(char, f64)]| -> Option<()> {
        let mut rest = text;
        let mut allowed = units;
        while !rest.is_empty() {
            let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
            let value: f64 = rest[..end].parse().ok()?;
            let unit = rest[end..].chars().next()?;
            let at = allowed.iter().position(|(u, _)| *u == unit)?;
            total += value * allowed[at].1;
            allowed = &allowed[at + 1..];
            parts += 1;
            rest = &rest[end + unit.len_utf8()..];
        }
        Some(())
    };
    read(days, &[('d', 86400e9)])?;
    if let Some(t) = time {
        if t.is_empty() {
            return None;
        }
        read(t, &[('h', 3600e9), ('m', 60e9), ('s', 1e9)])?;
    }
    (parts > 0).then_some(total)
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
    fn parses_the_forms_models_write() {
        let secs = |t: &str| parse_duration_ns(t).ok().map(|ns| ns as f64 / 1e9);
        for (text, want) in [
            ("60 s", 60.0),
            ("60s", 60.0),
            ("60", 60.0),
            (" 60 ", 60.0),
            ("1 minute", 60.0),
            ("2 minutes", 120.0),
            ("1.5m", 90.0),
            ("1.5 min", 90.0),
            ("PT1M", 60.0),
            ("PT1M30S", 90.0),
            ("pt0.5s", 0.5),
            ("P1D", 86400.0),
            ("P1DT1H", 90000.0),
            ("1h30m", 5400.0),
            ("1 hour 30 minutes", 5400.0),
            ("1 hour, 30 minutes", 5400.0),
            ("1 hour and 30 seconds", 3630.0),
            ("10 Seconds", 10.0),
            ("500 ms", 0.5),
            ("2 hrs", 7200.0),
        ] {
            assert_eq!(secs(text), Some(want), "{text}");
        }
    }

    #[test]
    fn refuses_garbage_listing_the_accepted_forms() {
        for text in [
            "",
            "  ",
            "s",
            "minutes",
            "PT",
            "P",
            "PT1S1M",
            "P1M",
            "P1Y",
            "1 fortnight",
            "1..5s",
            "1h-30m",
            "ten seconds",
            "1e3 s",
            "T1M",
        ] {
            assert!(parse_duration_ns(text).is_err(), "{text:?} accepted");
        }
        let message = parse_duration_ns("soon")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        for form in ["60", "30s", "2 minutes", "1.5m", "PT1M30S"] {
            assert!(message.contains(form), "{form} missing: {message}");
        }
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
