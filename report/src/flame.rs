//! The report's flame graph: folded stack samples
//! ([`ingero_tools::stacks::folded_pairs`]) drawn as a static SVG, roots at
//! the bottom, each frame as wide as the time it (and what it called) stood
//! for, siblings in name order as flamegraph.pl draws them. Python frames
//! are green, kernel frames orange, native frames red-yellow; hovering a
//! frame shows its name, time and share.

use crate::html::escape_html;
use ingero_store::TraceDb;
use ingero_tools::stacks::{folded_pairs, hot_stacks, StackQuery};
use ingero_tools::Scope;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Height of one frame row, pixels.
const ROW: f64 = 17.0;
/// Deepest stack drawn; deeper frames are cut.
const MAX_DEPTH: usize = 96;
/// Frames narrower than this are not drawn, pixels.
const MIN_WIDTH: f64 = 0.3;

#[derive(Default)]
struct Node {
    value: u64,
    children: BTreeMap<String, Node>,
}

fn tree(stacks: &[(Vec<String>, u64)]) -> Node {
    let mut root = Node::default();
    for (path, w) in stacks {
        root.value += w;
        let mut at = &mut root;
        for name in path.iter().take(MAX_DEPTH) {
            at = at.children.entry(name.clone()).or_default();
            at.value += w;
        }
    }
    root
}

fn depth(n: &Node) -> usize {
    n.children.values().map(|c| 1 + depth(c)).max().unwrap_or(0)
}

/// A colour from the frame's kind and a hash of its name.
fn colour(name: &str) -> String {
    let h = name.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let v = (h % 55) as u8;
    if name.contains(".py:") {
        format!("rgb({},{},{})", 80 + v, 190 + v / 2, 80 + v)
    } else if name.starts_with("[kernel]") {
        format!("rgb({},{},{})", 230, 140 + v, 40)
    } else {
        format!("rgb({},{},{})", 220 + v / 2, 90 + 2 * v, 50 + v / 2)
    }
}

#[allow(clippy::too_many_arguments)]
fn draw(
    out: &mut String,
    name: &str,
    n: &Node,
    x: f64,
    level: usize,
    scale: f64,
    height: f64,
    total: u64,
    unit: &str,
) {
    let w = n.value as f64 * scale;
    if w < MIN_WIDTH {
        return;
    }
    let y = height - (level as f64 + 1.0) * ROW;
    let share = n.value as f64 / total.max(1) as f64 * 100.0;
    let label = escape_html(name);
    let _ = write!(
        out,
        "<g><title>{label} ({} {unit}, {share:.1}%)</title><rect x=\"{x:.1}\" y=\"{y:.1}\" \
         width=\"{w:.1}\" height=\"{:.1}\" rx=\"2\" fill=\"{}\"/>",
        n.value,
        ROW - 1.0,
        colour(name)
    );
    let chars = ((w - 6.0) / 6.6).floor();
    if chars >= 3.0 {
        let chars = chars as usize;
        let text: String = if name.chars().count() > chars {
            let mut t: String = name.chars().take(chars.saturating_sub(2)).collect();
            t.push_str("..");
            t
        } else {
            name.to_string()
        };
        let _ = write!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            x + 3.0,
            y + ROW - 5.0,
            escape_html(&text)
        );
    }
    out.push_str("</g>\n");
    let mut cx = x;
    for (child, c) in &n.children {
        draw(out, child, c, cx, level + 1, scale, height, total, unit);
        cx += c.value as f64 * scale;
    }
}

/// The flame graph of `stacks` (root-first frame names, weight), `width`
/// pixels wide; `unit` names the weight in tooltips.
pub fn flame_svg(stacks: &[(Vec<String>, u64)], width: u32, unit: &str) -> String {
    let root = tree(stacks);
    let rows = depth(&root) + 1;
    let width = f64::from(width.max(200));
    let height = rows as f64 * ROW + 4.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"flame\" width=\"{width:.0}\" \
         height=\"{height:.0}\" viewBox=\"0 0 {width:.0} {height:.0}\" font-family=\"monospace\" \
         font-size=\"11\">"
    );
    if root.value > 0 {
        let scale = width / root.value as f64;
        draw(
            &mut out, "all", &root, 0.0, 0, scale, height, root.value, unit,
        );
    }
    out.push_str("</svg>\n");
    out
}

/// The report section: a flame graph of the capture's stack samples in
/// `scope` (Python where the trace has them, else native), with the hot
/// stacks' headline as its caption; `None` when the trace has no stacks.
pub fn flame_section(db: &TraceDb, scope: &Scope) -> ingero_tools::error::Result<Option<String>> {
    let q = StackQuery {
        scope: *scope,
        ..StackQuery::default()
    };
    let report = hot_stacks(db, &q)?;
    if report.samples == 0 {
        return Ok(None);
    }
    let pairs = folded_pairs(db, &q)?;
    let unit = if report.set == ingero_tools::stacks::SampleSet::CallSite {
        "calls"
    } else {
        "us"
    };
    let mut out = String::new();
    out.push_str("<section id=\"flame-graph\"><h2>Flame graph</h2>\n");
    let _ = writeln!(
        out,
        "<p>{} ({} samples); width is time{}.{}</p>",
        escape_html(&report.whole),
        report.samples,
        if unit == "calls" { " in calls" } else { "" },
        report
            .headline
            .as_ref()
            .map(|h| format!(" {}.", escape_html(h)))
            .unwrap_or_default()
    );
    out.push_str("<div style=\"overflow-x:auto\">\n");
    out.push_str(&flame_svg(&pairs, 1200, unit));
    out.push_str("</div></section>\n");
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_as_wide_as_their_time_and_nest_by_caller() {
        let stacks = vec![
            (vec!["main".to_string(), "spin".to_string()], 75),
            (vec!["main".to_string(), "wait".to_string()], 25),
        ];
        let svg = flame_svg(&stacks, 1000, "us");
        assert!(svg.contains("<title>main (100 us, 100.0%)</title><rect x=\"0.0\""));
        assert!(svg.contains("<title>spin (75 us, 75.0%)</title><rect x=\"0.0\""));
        assert!(svg.contains("width=\"750.0\""));
        assert!(svg.contains("<title>wait (25 us, 25.0%)</title><rect x=\"750.0\""));
        assert_eq!(flame_svg(&[], 500, "us").matches("<rect").count(), 0);
        assert!(flame_svg(&[(vec!["a<b".into()], 1)], 500, "us").contains("a&lt;b"));
    }
}
