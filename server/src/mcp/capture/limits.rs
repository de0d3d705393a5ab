//! What the operator allows captures started over MCP to take: how long
//! each may run, how large its database may grow, how many may run at
//! once. Set on the command line of `ingero mcp`, stated in the
//! `start_trace` description and in every capture status, enforced by the
//! capture controller.

use ingero_tools::format;
use schemars::JsonSchema;
use serde::Serialize;
use std::time::Duration;

/// Limits on captures started through the MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Longest a capture may run; `None`: no limit.
    pub max_duration: Option<Duration>,
    /// Largest a capture's database (with its write-ahead log) may grow,
    /// bytes; `None`: no limit.
    pub max_bytes: Option<u64>,
    /// Captures that may run at the same time (at least 1).
    pub max_concurrent: usize,
}

impl Default for CaptureLimits {
    /// No duration or size limit, one capture at a time.
    fn default() -> CaptureLimits {
        CaptureLimits {
            max_duration: None,
            max_bytes: None,
            max_concurrent: 1,
        }
    }
}

/// The limits as clients read them.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LimitsView {
    /// Longest a capture may run, seconds (`--capture-max-duration`); null:
    /// no limit.
    pub max_duration_s: Option<f64>,
    /// Largest a capture's database may grow, bytes (`--capture-max-bytes`);
    /// null: no limit.
    pub max_bytes: Option<u64>,
    /// Captures that may run at once (`--capture-max-concurrent`).
    pub max_concurrent: u32,
    /// The same in one sentence.
    pub summary: String,
}

impl CaptureLimits {
    /// The client's view.
    pub fn view(&self) -> LimitsView {
        LimitsView {
            max_duration_s: self.max_duration.map(|d| d.as_secs_f64()),
            max_bytes: self.max_bytes,
            max_concurrent: u32::try_from(self.max_concurrent).unwrap_or(u32::MAX),
            summary: self.sentence(),
        }
    }

    /// "each capture stops after at most 10m and at 512.0 MiB of database;
    /// 1 capture at a time (operator limits)".
    pub fn sentence(&self) -> String {
        let duration = match self.max_duration {
            Some(d) => format!("stops after at most {}", duration_text(d)),
            None => "has no time limit".to_string(),
        };
        let size = match self.max_bytes {
            Some(b) => format!("stops when its database reaches {}", bytes_text(b)),
            None => "has no size limit".to_string(),
        };
        let at_once = match self.max_concurrent {
            1 => "one capture at a time".to_string(),
            n => format!("at most {n} captures at a time"),
        };
        format!("Operator limits: each capture {duration} and {size}; {at_once}.")
    }
}

/// A duration as the shortest of `90s`, `10m`, `1.5h`... that reads back
/// the same through the duration parser.
pub fn duration_text(d: Duration) -> String {
    let secs = d.as_secs_f64();
    let units = [("h", 3600.0), ("m", 60.0), ("s", 1.0)];
    for (unit, size) in units {
        let n = secs / size;
        if n >= 1.0 && (n - n.round()).abs() < 1e-9 {
            return format!("{}{unit}", n.round() as u64);
        }
    }
    format!("{}ms", d.as_millis())
}

/// Bytes for a reader: `512.0 MiB (536870912 bytes)`.
pub fn bytes_text(b: u64) -> String {
    let exact = i64::try_from(b).unwrap_or(i64::MAX);
    if b < 1024 {
        format!("{b} bytes")
    } else {
        format!("{} ({b} bytes)", format::bytes(exact))
    }
}

/// Parses a size: a number of bytes, or with a K, M, G or T suffix (powers
/// of 1024, `MiB`/`MB` spellings accepted), at least 1.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let bad = || {
        format!("{text:?} is not a size: give bytes, or a number with K, M, G or T (e.g. 512M, 2G)")
    };
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix("ib"))
        .or_else(|| t.strip_suffix('B'))
        .or_else(|| t.strip_suffix('b'))
        .unwrap_or(t);
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        Some('g' | 'G') => (&t[..t.len() - 1], 30),
        Some('t' | 'T') => (&t[..t.len() - 1], 40),
        _ => (t, 0),
    };
    let value: f64 = digits.trim().parse().map_err(|_| bad())?;
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_with_binary_units() {
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert_eq!(parse_bytes("64K"), Ok(64 << 10));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1.5G"), Ok(3 << 29));
        assert_eq!(parse_bytes(" 8 MB "), Ok(8 << 20));
        for bad in ["", "0", "-1M", "lots", "1e400", "M", "3X"] {
            assert!(parse_bytes(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn durations_read_back_in_their_largest_whole_unit() {
        assert_eq!(duration_text(Duration::from_secs(600)), "10m");
        assert_eq!(duration_text(Duration::from_secs(7200)), "2h");
        assert_eq!(duration_text(Duration::from_secs(90)), "90s");
        assert_eq!(duration_text(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn the_sentence_states_every_limit() {
        let limits = CaptureLimits {
            max_duration: Some(Duration::from_secs(600)),
            max_bytes: Some(512 << 20),
            max_concurrent: 2,
        };
        assert_eq!(
            limits.sentence(),
            "Operator limits: each capture stops after at most 10m and stops when its database \
             reaches 512.0 MiB (536870912 bytes); at most 2 captures at a time."
        );
        assert_eq!(
            CaptureLimits::default().sentence(),
            "Operator limits: each capture has no time limit and has no size limit; one capture \
             at a time."
        );
    }
}
