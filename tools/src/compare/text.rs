//! A comparison as plain text: the verdict first, then the tables behind it
//! (what `ingero compare` prints and the `compare_runs` tool's text answer).

use super::pair::Pair;
use super::Comparison;
use crate::format::{ns, pct};
use std::fmt::Write;

/// Findings, ops and rates listed at most in the text.
const LISTED: usize = 12;

fn side(v: Option<f64>, f: &dyn Fn(f64) -> String) -> String {
    v.map_or_else(|| "-".to_string(), f)
}

fn row(p: &Pair, f: &dyn Fn(f64) -> String) -> String {
    format!("{:>12} {:>12}", side(p.base, f), side(p.new, f))
}

fn share(v: f64) -> String {
    pct(v)
}

fn bytes(v: f64) -> String {
    crate::format::bytes(v.round() as i64)
}

fn dur(v: f64) -> String {
    ns(v.round() as i64)
}

fn plain(v: f64) -> String {
    // No "-0.00".
    let v = v + 0.0;
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// The brief answer: verdict, runs, idle share and the findings.
pub fn brief(c: &Comparison) -> String {
    brief_top(c, LISTED)
}

/// The brief answer listing at most `findings` findings (the largest): what
/// another tool's answer appends when asked to compare.
pub fn brief_top(c: &Comparison, findings: usize) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}", c.verdict.sentence);
    let _ = writeln!(
        s,
        "\nbase: {} (loop {:.1} s{})\nnew:  {} (loop {:.1} s{})",
        c.base.path,
        c.base.loop_s,
        c.base
            .steps
            .map_or(String::new(), |x| format!(", {x:.0} steps")),
        c.new.path,
        c.new.loop_s,
        c.new
            .steps
            .map_or(String::new(), |x| format!(", {x:.0} steps")),
    );
    let _ = writeln!(s, "\n{:<40} {:>12} {:>12}", "GPU idle", "base", "new");
    let _ = writeln!(
        s,
        "{:<40} {}",
        "share of loop",
        row(&c.idle.loop_idle_share, &share)
    );
    let _ = writeln!(
        s,
        "{:<40} {}",
        "per step",
        row(&c.idle.loop_idle_per_step_ns, &dur)
    );
    if let Some(b) = c.idle.noise_band {
        let _ = writeln!(s, "{:<40} {:>25}", "noise band (+/-)", pct(b));
    }
    let _ = writeln!(
        s,
        "\n{:<40} {:>12} {:>12}  status",
        "finding (share of loop time)", "base", "new"
    );
    for f in c.findings.iter().take(findings) {
        let _ = writeln!(
            s,
            "{:<40} {}  {}",
            f.label(),
            row(&f.per_loop_s, &share),
            f.presence.label()
        );
    }
    if c.findings.len() > findings {
        let _ = writeln!(
            s,
            "({} more findings, each explaining less)",
            c.findings.len() - findings
        );
    }
    s
}

/// The whole comparison as text.
pub fn full(c: &Comparison) -> String {
    let mut s = brief(c);
    let _ = writeln!(
        s,
        "\n{:<40} {:>12} {:>12}",
        "idle split (share of window)", "base", "new"
    );
    for p in &c.idle.parts {
        let _ = writeln!(s, "{:<40} {}", p.part, row(&p.share, &share));
    }
    let _ = writeln!(
        s,
        "\n{:<40} {:>12} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "op (per s of window)",
        "calls base",
        "calls new",
        "p50 base",
        "p50 new",
        "p99 base",
        "p99 new"
    );
    for o in c.ops.iter().take(LISTED) {
        let _ = writeln!(
            s,
            "{:<40} {} {} {}",
            o.op,
            row(&o.count_per_s, &plain),
            row(&o.p50_ns, &dur),
            row(&o.p99_ns, &dur)
        );
    }
    let _ = writeln!(s, "\n{:<40} {:>12} {:>12}", "rate", "base", "new");
    for r in &c.rates {
        let f: &dyn Fn(f64) -> String = match r.unit.as_str() {
            "ratio" => &share,
            "bytes" | "bytes/s" => &bytes,
            _ => &plain,
        };
        let _ = writeln!(s, "{:<40} {}  {}", r.name, row(&r.value, f), r.unit);
    }
    let _ = writeln!(
        s,
        "\n{:<40} {:>12} {:>12}",
        "processes (switches per s)", "base", "new"
    );
    for g in &c.processes {
        let name = format!("{:?} {}", g.role, g.command);
        let name: String = name.chars().take(40).collect();
        let _ = writeln!(
            s,
            "{:<40} {}  {}",
            name,
            row(&g.context_switches_per_s, &plain),
            g.presence.label()
        );
    }
    if !c.code.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<40} {:>12} {:>12}",
            "code (share of loop time)", "base", "new"
        );
        for k in &c.code {
            let name: String = format!("{} {}", k.part, k.code).chars().take(40).collect();
            let _ = writeln!(s, "{:<40} {}", name, row(&k.per_loop_s, &share));
        }
    }
    for n in &c.notes {
        let _ = writeln!(s, "\nnote: {n}");
    }
    s
}
