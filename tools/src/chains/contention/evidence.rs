//! The finding's evidence items: the CPU samples, the contenders, the main
//! process's switches and slow calls, the GPU thread's off-CPU time, the
//! slowed op's tail and the GPU and GPU thread while saturated.

use super::super::context::Context;
use super::contenders::Blame;
use super::saturated::Saturated;
use crate::finding::Evidence;
use crate::finding::Unit;
use crate::rows::Totals;

/// Every evidence item, in report order.
pub fn list(ctx: &Context, s: &Saturated, blame: &Blame, main_sw: &Totals) -> Vec<Evidence> {
    let mut evidence = counts(ctx, s, blame, main_sw);
    if let Some(st) = ctx.starvation.as_ref() {
        evidence.push(Evidence::new(
            "gpu_thread_off_cpu",
            st.off_cpu_ns as f64,
            Unit::Ns,
            "raw rows",
        ));
        evidence.push(Evidence::new(
            "gpu_thread_off_cpu_share",
            st.off_cpu_share * 100.0,
            Unit::Percent,
            "raw rows",
        ));
    }
    if let Some(w) = s.worst {
        let p50 = w.p50_ns.unwrap_or(0) as f64;
        let p99 = w.p99_ns.unwrap_or(0) as f64;
        evidence.push(Evidence::new(
            format!("{}_p50", w.op),
            p50,
            Unit::Ns,
            "raw rows",
        ));
        evidence.push(Evidence::new(
            format!("{}_p99", w.op),
            p99,
            Unit::Ns,
            "raw rows",
        ));
        evidence.push(Evidence::new(
            format!("{}_tail_ratio", w.op),
            s.ratio,
            Unit::Ratio,
            "raw rows",
        ));
    }
    evidence.extend(while_saturated(s));
    evidence
}

/// The counts every finding carries: CPU samples, contenders, the main
/// process's switches, slow calls.
fn counts(ctx: &Context, s: &Saturated, blame: &Blame, main_sw: &Totals) -> Vec<Evidence> {
    let sat = &ctx.sat;
    let snapshots = "system snapshots";
    vec![
        Evidence::new(
            "cpu_saturated_samples",
            sat.saturated as f64,
            Unit::Count,
            snapshots,
        ),
        Evidence::new("cpu_samples", sat.samples as f64, Unit::Count, snapshots),
        Evidence::new("cpu_peak", sat.peak_pct, Unit::Percent, snapshots),
        Evidence::new(
            "contender_context_switches",
            blame.switches as f64,
            Unit::Count,
            "aggregates",
        ),
        Evidence::new(
            "contender_page_allocs",
            blame.pages as f64,
            Unit::Count,
            "aggregates",
        ),
        Evidence::new(
            "contender_processes",
            blame.group.len() as f64,
            Unit::Count,
            "process table",
        ),
        Evidence::new(
            "main_context_switches",
            main_sw.count as f64,
            Unit::Count,
            "aggregates",
        ),
        Evidence::new(
            "main_off_cpu_max",
            main_sw.max_dur_ns as f64,
            Unit::Ns,
            "aggregates",
        ),
        Evidence::new("slow_calls", s.slow.len() as f64, Unit::Count, "raw rows"),
        Evidence::new(
            "slow_calls_while_saturated",
            s.slow_in_sat.len() as f64,
            Unit::Count,
            "raw rows",
        ),
    ]
}

/// The GPU and the GPU thread's CUDA calls over the saturated stretch.
fn while_saturated(s: &Saturated) -> [Evidence; 4] {
    [
        Evidence::new(
            "gpu_busy_share_while_saturated",
            s.busy.share() * 100.0,
            Unit::Percent,
            s.busy.source_label(),
        ),
        Evidence::new(
            "cuda_call_share_while_saturated",
            (1.0 - s.gap.idle_share) * 100.0,
            Unit::Percent,
            "raw rows",
        ),
        Evidence::new(
            "cuda_calls_while_saturated",
            s.gap.calls as f64,
            Unit::Count,
            "raw rows",
        ),
        Evidence::new(
            "longest_submission_gap",
            s.gap.max_gap_ns as f64,
            Unit::Ns,
            "raw rows",
        ),
    ]
}
