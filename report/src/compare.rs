//! The report's comparison section: when the page is made for a run with a
//! baseline beside it (`ingero report --db NEW --base BASE`), it opens with
//! the answer to "did the fix work?": the verdict, the GPU idle share of
//! each run, each finding present in both, gone or new with the idle time
//! it explains, the idle split, the CUDA ops, the rates and the code paths
//! whose idle time moved, side by side.
//!
//! Everything here is drawn from the typed
//! [`Comparison`](ingero_tools::compare::Comparison), the same value
//! `ingero compare --json` prints. The section is static HTML (readable
//! without the script); each figure's cell carries its raw value in
//! `data-value`, so a test can check the page against the comparison and
//! against SQL on the two files.

use crate::html::escape_html;
use ingero_tools::compare::{rates::RateChange, Comparison, Pair};
use ingero_tools::format::{bytes, ns, pct};
use std::fmt::Write;

/// Ops listed at most (most time per second first, as the comparison sorts).
pub const OPS_LISTED: usize = 15;

/// How a figure reads in the page.
#[derive(Clone, Copy)]
enum Unit {
    /// A 0-1 share, as a percentage.
    Share,
    /// Nanoseconds, as a duration.
    Ns,
    /// Bytes.
    Bytes,
    /// Bytes per second.
    BytesPerS,
    /// Events per second.
    PerS,
    /// A plain number.
    Plain,
}

impl Unit {
    /// The unit of a rate, from the unit the comparison names.
    fn of_rate(r: &RateChange) -> Unit {
        match r.unit.as_str() {
            "ratio" => Unit::Share,
            "bytes" => Unit::Bytes,
            "bytes/s" => Unit::BytesPerS,
            "1/s" => Unit::PerS,
            _ => Unit::Plain,
        }
    }

    /// `v` in this unit, readable.
    fn text(self, v: f64) -> String {
        // No "-0.0".
        let v = v + 0.0;
        match self {
            Unit::Share => pct(v),
            Unit::Ns => ns(v.round() as i64),
            Unit::Bytes => bytes(v.round() as i64),
            Unit::BytesPerS => format!("{}/s", bytes(v.round() as i64)),
            Unit::PerS => format!("{}/s", plain(v)),
            Unit::Plain => plain(v),
        }
    }

    /// A change `d` in this unit, signed (percentage points for shares).
    fn change(self, d: f64) -> String {
        let d = d + 0.0;
        let sign = if d > 0.0 { "+" } else { "" };
        match self {
            Unit::Share => format!("{sign}{:.1} pts", d * 100.0),
            _ if d < 0.0 => format!("-{}", self.text(-d)),
            _ => format!("{sign}{}", self.text(d)),
        }
    }
}

/// A number with two decimals below 100, none above.
fn plain(v: f64) -> String {
    if v.abs() >= 100.0 {
        ingero_tools::format::count(v.round() as i64)
    } else {
        format!("{v:.2}")
    }
}

/// One figure's cell: readable text, raw value in `data-value`.
fn cell(v: Option<f64>, unit: Unit) -> String {
    match v {
        Some(v) => format!("<td data-value=\"{v}\">{}</td>", escape_html(&unit.text(v))),
        None => "<td class=\"na\">-</td>".to_string(),
    }
}

/// The base, new and change cells of a pair.
fn pair_cells(p: &Pair, unit: Unit) -> String {
    let change = match p.change {
        Some(d) => format!(
            "<td class=\"chg\" data-value=\"{d}\">{}</td>",
            escape_html(&unit.change(d))
        ),
        None => "<td class=\"na\">-</td>".to_string(),
    };
    format!("{}{}{change}", cell(p.base, unit), cell(p.new, unit))
}

/// A table's opening and header row.
fn table(out: &mut String, id: &str, heads: &[&str]) {
    let _ = write!(out, "<table class=\"cmp\" id=\"{id}\"><tr>");
    for (i, h) in heads.iter().enumerate() {
        let class = if i == 0 { " class=\"l\"" } else { "" };
        let _ = write!(out, "<th{class}>{}</th>", escape_html(h));
    }
    out.push_str("</tr>\n");
}

/// One run's line under the verdict (HTML).
fn run_line(label: &str, r: &ingero_tools::compare::run::RunInfo) -> String {
    let mut s = format!("{label}: {} (loop {:.1} s", r.path, r.loop_s);
    if let Some(steps) = r.steps {
        let _ = write!(s, ", {steps:.0} steps");
    }
    s.push(')');
    let mut s = escape_html(&s);
    if !r.main_command.is_empty() {
        let _ = write!(s, ", <code>{}</code>", escape_html(&r.main_command));
    }
    s
}

/// The comparison section of the page.
pub fn comparison_section(c: &Comparison) -> String {
    let mut out = String::new();
    let outcome = serde_json::to_value(c.verdict.outcome)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let confidence = serde_json::to_value(c.verdict.confidence)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<section id=\"comparison\" data-outcome=\"{}\" data-confidence=\"{}\">\n\
         <h2>Compared with the baseline: did the change help?</h2>",
        escape_html(&outcome),
        escape_html(&confidence)
    );
    let calm = if outcome == "better" || outcome == "no_change" {
        " calm"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<div class=\"verdict{calm}\" id=\"compare-verdict\">{}</div>",
        escape_html(&c.verdict.sentence)
    );
    let window = match c.window {
        ingero_tools::compare::WindowChoice::Steady => {
            "Each run's steady phase (first to last CUDA call), whatever window the rest of the page shows"
        }
        ingero_tools::compare::WindowChoice::Whole => "The whole of each capture",
    };
    let _ = writeln!(
        out,
        "<p class=\"meta\">{}<br>{}<br>{window}; times per second of loop and per step, so runs of \
         different lengths compare.</p>",
        run_line("base", &c.base),
        run_line("new", &c.new)
    );

    out.push_str("<h3>GPU idle</h3>\n");
    table(&mut out, "compare-idle", &["", "base", "new", "change"]);
    let idle = &c.idle;
    for (key, label, p, unit) in [
        (
            "loop_idle_share",
            "share of the loop",
            &idle.loop_idle_share,
            Unit::Share,
        ),
        (
            "loop_idle_per_step_ns",
            "per step",
            &idle.loop_idle_per_step_ns,
            Unit::Ns,
        ),
        (
            "idle_share",
            "share of the process's window",
            &idle.idle_share,
            Unit::Share,
        ),
    ] {
        let _ = writeln!(
            out,
            "<tr data-key=\"{key}\"><td class=\"l\">{label}</td>{}</tr>",
            pair_cells(p, unit)
        );
    }
    out.push_str("</table>\n");
    match idle.noise_band {
        Some(b) => {
            let _ = writeln!(
                out,
                "<p class=\"meta\" id=\"compare-noise\" data-value=\"{b}\">A change of the idle share \
                 within +/-{:.1} points is inside the runs' own spread (noise).</p>",
                b * 100.0
            );
        }
        None => out.push_str(
            "<p class=\"meta\" id=\"compare-noise\">The files show no spread to judge a change by.</p>\n",
        ),
    }

    out.push_str("<h3>Findings</h3>\n");
    table(
        &mut out,
        "compare-findings",
        &[
            "finding",
            "status",
            "explained base",
            "explained new",
            "share of loop base",
            "share of loop new",
            "change",
            "per step base",
            "per step new",
        ],
    );
    for f in &c.findings {
        let per_step = format!(
            "{}{}",
            cell(f.per_step_ns.base, Unit::Ns),
            cell(f.per_step_ns.new, Unit::Ns)
        );
        let _ = writeln!(
            out,
            "<tr data-key=\"{}\" data-presence=\"{}\"><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             {}{}{}{per_step}</tr>",
            escape_html(&f.key),
            f.presence.label(),
            escape_html(&f.label()),
            f.presence.label(),
            cell(f.explained_ns.base, Unit::Ns),
            cell(f.explained_ns.new, Unit::Ns),
            pair_cells(&f.per_loop_s, Unit::Share),
        );
    }
    if c.findings.is_empty() {
        out.push_str(
            "<tr><td class=\"l empty\" colspan=\"9\">no finding in either run</td></tr>\n",
        );
    }
    out.push_str("</table>\n");

    if !idle.parts.is_empty() {
        out.push_str("<h3>Idle split (share of the process's window)</h3>\n");
        table(
            &mut out,
            "compare-parts",
            &["part", "base", "new", "change"],
        );
        for p in &idle.parts {
            let _ = writeln!(
                out,
                "<tr data-key=\"{}\"><td class=\"l\">{}</td>{}</tr>",
                escape_html(&p.part),
                escape_html(&p.part),
                pair_cells(&p.share, Unit::Share)
            );
        }
        out.push_str("</table>\n");
    }

    out.push_str("<h3>CUDA ops (per second of window)</h3>\n");
    table(
        &mut out,
        "compare-ops",
        &[
            "op",
            "status",
            "calls/s base",
            "calls/s new",
            "time/s base",
            "time/s new",
            "p50 base",
            "p50 new",
            "p99 base",
            "p99 new",
        ],
    );
    for o in c.ops.iter().take(OPS_LISTED) {
        let two = |p: &Pair, unit: Unit| format!("{}{}", cell(p.base, unit), cell(p.new, unit));
        let _ = writeln!(
            out,
            "<tr data-key=\"{}\" data-presence=\"{}\"><td class=\"l\">{}</td><td class=\"l\">{}</td>{}{}{}{}</tr>",
            escape_html(&o.op),
            o.presence.label(),
            escape_html(&o.op),
            o.presence.label(),
            two(&o.count_per_s, Unit::PerS),
            two(&o.total_ns_per_s, Unit::Ns),
            two(&o.p50_ns, Unit::Ns),
            two(&o.p99_ns, Unit::Ns),
        );
    }
    out.push_str("</table>\n");
    if c.ops.len() > OPS_LISTED {
        let _ = writeln!(
            out,
            "<p class=\"meta\">{} more ops in <code>ingero compare --json</code>.</p>",
            c.ops.len() - OPS_LISTED
        );
    }

    out.push_str("<h3>Rates</h3>\n");
    table(
        &mut out,
        "compare-rates",
        &["rate", "base", "new", "change"],
    );
    for r in &c.rates {
        let _ = writeln!(
            out,
            "<tr data-key=\"{}\"><td class=\"l\" title=\"{}\">{}</td>{}</tr>",
            escape_html(&r.name),
            escape_html(&r.what),
            escape_html(&r.what),
            pair_cells(&r.value, Unit::of_rate(r))
        );
    }
    out.push_str("</table>\n");

    if !c.code.is_empty() {
        out.push_str("<h3>Code paths whose idle time moved (share of loop time)</h3>\n");
        table(
            &mut out,
            "compare-code",
            &["code", "part", "base", "new", "change"],
        );
        for k in &c.code {
            let _ = writeln!(
                out,
                "<tr data-key=\"{}\"><td class=\"l code\">{}</td><td class=\"l\">{}</td>{}</tr>",
                escape_html(&format!("{}:{}", k.part, k.code)),
                escape_html(&k.code),
                escape_html(&k.part),
                pair_cells(&k.per_loop_s, Unit::Share)
            );
        }
        out.push_str("</table>\n");
    }

    if !c.notes.is_empty() {
        out.push_str("<ul class=\"notes\">\n");
        for n in &c.notes {
            let _ = writeln!(out, "<li>{}</li>", escape_html(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_read_in_their_units() {
        assert_eq!(Unit::Share.text(0.295), "29.5%");
        assert_eq!(Unit::Share.change(-0.205), "-20.5 pts");
        assert_eq!(Unit::Ns.text(9_900_000.0), "9.9 ms");
        assert_eq!(Unit::Ns.change(-7_400_000.0), "-7.4 ms");
        assert_eq!(Unit::BytesPerS.text(3.0 * 1024.0 * 1024.0), "3.0 MiB/s");
        assert_eq!(Unit::PerS.text(12_345.4), "12,345/s");
        assert_eq!(Unit::PerS.change(1.5), "+1.50/s");
        assert_eq!(cell(None, Unit::Ns), "<td class=\"na\">-</td>");
        assert_eq!(
            cell(Some(0.5), Unit::Share),
            "<td data-value=\"0.5\">50.0%</td>"
        );
    }
}
