//! Human-readable numbers for reports.

/// Formats nanoseconds with a unit that keeps 3 significant digits.
pub fn ns(v: i64) -> String {
    let a = v.unsigned_abs() as f64;
    let s = v.signum() as f64;
    if a >= 1e9 {
        format!("{:.2} s", s * a / 1e9)
    } else if a >= 1e6 {
        format!("{:.1} ms", s * a / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} us", s * a / 1e3)
    } else {
        format!("{v} ns")
    }
}

/// Formats an optional duration, `n/a` when absent.
pub fn opt_ns(v: Option<i64>) -> String {
    v.map_or_else(|| "n/a".to_string(), ns)
}

/// Formats a byte count with a binary unit.
pub fn bytes(v: i64) -> String {
    let a = v as f64;
    if a >= (1u64 << 30) as f64 {
        format!("{:.2} GiB", a / (1u64 << 30) as f64)
    } else if a >= (1u64 << 20) as f64 {
        format!("{:.1} MiB", a / (1u64 << 20) as f64)
    } else if a >= 1024.0 {
        format!("{:.1} KiB", a / 1024.0)
    } else {
        format!("{v} B")
    }
}

/// Formats an integer with thousands separators.
pub fn count(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        out.insert(0, '-');
    }
    out
}

/// Formats a 0..1 share as a percentage.
pub fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats() {
        assert_eq!(super::ns(42_000_000), "42.0 ms");
        assert_eq!(super::ns(25_000), "25.0 us");
        assert_eq!(super::count(1_173_407), "1,173,407");
        assert_eq!(super::bytes(3 << 20), "3.0 MiB");
    }
}
