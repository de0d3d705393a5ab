//! What the main GPU process went through while the CPU was saturated: the
//! stretch itself, how busy the GPU and the GPU thread were, and which of
//! its calls were slowed meanwhile.

use super::super::context::{Context, Symptom};
use super::super::measured::{busy_over, BusyFigure};
use super::submission::{submission_gap, SubmissionGap};
use crate::rows::Call;

/// The main process over the saturated stretch.
pub struct Saturated<'c> {
    /// Where the CPU was saturated (the whole window without samples).
    pub span: (i64, i64),
    /// The GPU thread's CUDA calls in it.
    pub gap: SubmissionGap,
    /// GPU busy in it.
    pub busy: BusyFigure,
    /// How idle the GPU was in it, 0-1: measured where NVML samples exist,
    /// else the share of time the GPU thread was outside CUDA calls.
    pub gpu_idle: f64,
    /// Every slow call of the main process (>= 10x its op's median).
    pub slow: Vec<&'c Call>,
    /// Those made while the CPU was saturated.
    pub slow_in_sat: Vec<&'c Call>,
    /// The heaviest tail among ops slowed while saturated (p99 >= 5x p50).
    pub worst: Option<&'c Symptom>,
    /// Its tail ratio (1 without one).
    pub ratio: f64,
    /// Share of its wall time the GPU thread spent off-CPU.
    pub off_share: f64,
}

impl<'c> Saturated<'c> {
    /// The facts of the saturated stretch for the main process `main`.
    pub fn of(ctx: &'c Context, main: i32) -> Saturated<'c> {
        let ds = ctx.ds;
        let sat = &ctx.sat;
        let span = match (sat.times.first(), sat.times.last()) {
            (Some(a), Some(b)) => ((*a - ctx.sample_interval_ns).max(ds.window.lo_ns), *b),
            _ => (ds.window.lo_ns, ds.window.hi_ns),
        };
        let gap = submission_gap(ctx, span);
        let busy = busy_over(ctx, main, span);
        // A host-side figure where there are no samples, stated as such.
        let gpu_idle = if busy.is_measured() {
            1.0 - busy.share()
        } else {
            gap.idle_share
        };
        let slow = ctx.slow_calls();
        let slow_in_sat: Vec<&Call> = slow
            .iter()
            .copied()
            .filter(|c| sat.samples == 0 || sat.covers(c.ts_ns, ctx.sample_interval_ns))
            .collect();
        let worst = ctx.symptoms.iter().find(|s| {
            s.tail_ratio.is_some_and(|r| r >= 5.0)
                && slow_in_sat.iter().any(|c| ds.op_name(c.op_id) == s.op)
        });
        Saturated {
            span,
            gap,
            busy,
            gpu_idle,
            slow,
            slow_in_sat,
            worst,
            ratio: worst.and_then(|w| w.tail_ratio).unwrap_or(1.0),
            off_share: ctx.starvation.as_ref().map_or(0.0, |s| s.off_cpu_share),
        }
    }

    /// Length of the stretch, ns.
    pub fn len_ns(&self) -> i64 {
        self.span.1 - self.span.0
    }

    /// True when nothing went wrong for the main process meanwhile: no slowed
    /// op, its GPU thread barely off-CPU, the GPU mostly busy.
    pub fn harmless(&self) -> bool {
        self.worst.is_none() && self.off_share < 0.05 && self.gpu_idle < 0.5
    }

    /// Share of the slow calls made while saturated (0 without slow calls).
    pub fn slow_correlation(&self) -> f64 {
        if self.slow.is_empty() {
            0.0
        } else {
            self.slow_in_sat.len() as f64 / self.slow.len() as f64
        }
    }
}
