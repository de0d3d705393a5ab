//! Plain-text rendering of the rank report: clocks of merged inputs, each
//! rank's arrivals at its collectives, and the stragglers.

use crate::format::ns;
use crate::ranks::RankReport;
use std::fmt::Write;

/// The "Ranks" section of `explain`.
pub fn ranks_text(r: &RankReport) -> String {
    let mut s = String::from("Ranks\n");
    if r.is_empty() {
        s.push_str(
            "  no NCCL communicator recorded in this file: no ranks to compare (a capture of a \
             job that uses NCCL, or `ingero merge` of its nodes' captures, has them)\n",
        );
        return s;
    }
    for c in &r.clocks {
        let _ = writeln!(
            s,
            "  clock of {} (session {}): {}{}",
            c.node,
            c.session_id,
            if c.reference {
                "reference".to_string()
            } else if c.offset_spread_ns < 0 {
                "offset not estimated".to_string()
            } else {
                format!(
                    "offset {:+.3} ms +/- {:.3} ms over {} collectives",
                    c.clock_offset_ns as f64 / 1e6,
                    c.offset_spread_ns as f64 / 1e6,
                    c.matched
                )
            },
            if c.method.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.method)
            }
        );
    }
    if !r.arrivals.is_empty() {
        let _ = writeln!(
            s,
            "  {:<36} {:>11} {:>11} {:>9} {:>12} {:>12}",
            "rank", "collectives", "inside", "last at", "median wait", "total wait"
        );
        for a in &r.arrivals {
            let _ = writeln!(
                s,
                "  {:<36} {:>11} {:>11} {:>9} {:>12} {:>12}",
                a.who,
                a.collectives,
                ns(a.inside_ns),
                a.last,
                ns(a.median_wait_ns),
                ns(a.wait_ns)
            );
        }
    }
    for st in &r.stragglers {
        let _ = writeln!(s, "  [STRAGGLER] {}", st.summary);
        for w in &st.waits {
            let _ = writeln!(
                s,
                "      {} waited {} for it ({} inside those collective calls)",
                w.who,
                ns(w.wait_ns),
                ns(w.inside_calls_ns)
            );
        }
        let parts: Vec<String> = st
            .during_late
            .iter()
            .take(4)
            .map(|p| format!("{} {} ({:.0}%)", p.state, ns(p.ns), p.share * 100.0))
            .collect();
        if !parts.is_empty() {
            let _ = writeln!(s, "      its thread while late: {}", parts.join(", "));
        }
        if let Some(st) = &st.late_stacks {
            let frames: Vec<String> = st
                .frames
                .iter()
                .take(3)
                .map(|f| format!("{} {} of {}", f.frame, f.samples, st.samples))
                .collect();
            let _ = writeln!(
                s,
                "      its {} stack samples while late, innermost own frame: {}",
                st.kind.replace('_', "-"),
                frames.join(", ")
            );
        }
    }
    if r.stragglers.is_empty() && !r.arrivals.is_empty() {
        s.push_str("  no straggler: no rank arrived last at most collectives by a median of 1 ms or more\n");
    }
    for b in &r.basis {
        let _ = writeln!(s, "      basis: {b}");
    }
    s
}
