//! Compact text of a [`StackReport`] (what `get_stacks` says beside its
//! structured content).

use crate::format::{count, ns, pct};
use crate::stacks::StackReport;
use std::fmt::Write;

/// Frames shown per hot stack, innermost first.
const FRAMES_SHOWN: usize = 8;

/// The report as a few lines: headline, the whole by category, top frames,
/// hot stacks.
pub fn stacks_text(r: &StackReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Stacks: {} ({} samples, {})",
        r.whole,
        count(r.samples as i64),
        ns(r.time_ns)
    );
    if let Some(h) = &r.headline {
        let _ = writeln!(out, "  {h}");
    }
    if !r.categories.is_empty() {
        let parts: Vec<String> = r
            .categories
            .iter()
            .map(|c| {
                format!(
                    "{} {} ({})",
                    c.category.words(),
                    pct(c.share),
                    ns(c.time_ns)
                )
            })
            .collect();
        let _ = writeln!(out, "  by category: {}", parts.join(", "));
    }
    for (title, frames) in [("Python", &r.top_python), ("native", &r.top_native)] {
        if frames.is_empty() {
            continue;
        }
        let _ = writeln!(out, "  top {title} frames (self / total):");
        for f in frames.iter().take(5) {
            let at = if f.location.is_empty() {
                String::new()
            } else {
                format!("  {}", f.location)
            };
            let _ = writeln!(
                out,
                "    {:>6} / {:>6}  {}{at}",
                pct(f.self_share),
                pct(f.total_share),
                f.frame
            );
        }
    }
    for (i, s) in r.stacks.iter().take(5).enumerate() {
        let path: Vec<String> = s
            .frames
            .iter()
            .take(FRAMES_SHOWN)
            .map(|f| f.label())
            .collect();
        let more = s.frames.len().saturating_sub(FRAMES_SHOWN);
        let tail = if more > 0 {
            format!(" <- ... {more} more")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  #{} {} ({} samples): {}{tail}",
            i + 1,
            pct(s.share),
            count(s.samples as i64),
            if path.is_empty() {
                "[no frames]".to_string()
            } else {
                path.join(" <- ")
            }
        );
    }
    for n in &r.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out
}
