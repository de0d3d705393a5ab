//! The finding in words: its summary line, root cause sentence and the
//! chain of steps from the saturated CPU down to the slowed CUDA calls.

use super::super::context::{Context, SATURATED_PCT};
use super::contenders::Blame;
use super::saturated::Saturated;
use crate::finding::Layer;
use crate::finding::{step, ChainStep};
use crate::format;
use crate::rows::Totals;

/// The symptom seen on the main process while saturated: the slowed op's
/// tail, else the idle GPU or GPU thread, else the thread off-CPU.
pub fn symptom(main: i32, s: &Saturated) -> String {
    match s.worst {
        Some(w) => format!(
            "{} p99 {} ({:.0}x p50 {})",
            w.op,
            format::opt_ns(w.p99_ns),
            s.ratio,
            format::opt_ns(w.p50_ns)
        ),
        None if s.busy.is_measured() && s.gpu_idle >= 0.5 => {
            format!("{} while saturated", s.busy.text())
        }
        None if s.gpu_idle >= 0.5 => format!(
            "GPU thread of {main} inside CUDA calls only {} of the saturated {}",
            format::pct(1.0 - s.gap.idle_share),
            format::ns(s.len_ns())
        ),
        None => "GPU thread off-CPU".to_string(),
    }
}

/// How saturated the CPU samples were.
pub fn cpu(ctx: &Context) -> String {
    let sat = &ctx.sat;
    if sat.samples > 0 {
        format!(
            "CPU >= {SATURATED_PCT:.0}% in {} of {} samples (peak {:.0}%)",
            sat.saturated, sat.samples, sat.peak_pct
        )
    } else {
        "no CPU samples".to_string()
    }
}

/// One line: symptom <- CPU <- culprits.
pub fn summary(symptom: &str, cpu: &str, blame: &Blame) -> String {
    format!(
        "{symptom} <- {cpu} <- {}: {} context switches",
        blame.who,
        format::count(blame.switches)
    )
}

/// The root-cause sentence: who keeps the cores busy and what that does to
/// the main process.
pub fn root_cause(main: i32, s: &Saturated, blame: &Blame) -> String {
    let victim = victim(main, s);
    let who = &blame.who;
    if blame.workers {
        format!(
            "CPU contention by the job's own input pipeline: {who} keep every core busy ({} context switches, {} page allocations), {victim}.",
            format::count(blame.switches),
            format::count(blame.pages)
        )
    } else {
        format!(
            "CPU contention: {who} keep the cores busy ({} context switches), {victim}.",
            format::count(blame.switches)
        )
    }
}

/// What the contention does to the main process: its GPU thread waits for a
/// core, its calls slow down, or it barely submits work.
fn victim(main: i32, s: &Saturated) -> String {
    let busy_text = s.busy.text();
    let off_share = s.off_share;
    if off_share >= 0.05 && s.busy.is_measured() && s.gpu_idle < 0.2 {
        format!(
            "so the GPU thread of {main} waits for a core ({} of its time off-CPU), though the GPU stayed busy ({busy_text})",
            format::pct(off_share)
        )
    } else if off_share >= 0.05 {
        format!(
            "so the GPU thread of {main} waits for a core ({} of its time off-CPU) and the GPU waits for it ({busy_text})",
            format::pct(off_share)
        )
    } else if s.busy.is_measured() && s.gpu_idle < 0.5 {
        format!("and {main}'s CUDA calls slow down meanwhile ({busy_text})")
    } else {
        format!(
            "and the GPU thread of {main} was inside CUDA calls only {} of that time ({busy_text}): it waits on a starved pipeline rather than submitting work",
            format::pct(1.0 - s.gap.idle_share)
        )
    }
}

/// The chain's steps, from the CPU samples down to the slowed calls.
pub fn steps(
    ctx: &Context,
    main: i32,
    s: &Saturated,
    blame: &Blame,
    main_sw: &Totals,
    cpu: &str,
    symptom: &str,
) -> Vec<ChainStep> {
    let mut steps = vec![step(Layer::System, cpu.to_string())];
    steps.push(step(
        Layer::Host,
        format!(
            "{}: {} context switches, {} page allocations",
            blame.who,
            format::count(blame.switches),
            format::count(blame.pages)
        ),
    ));
    if let Some(line) = preemption(ctx, main, main_sw) {
        steps.push(step(Layer::Host, line));
    }
    steps.push(step(
        Layer::Cuda,
        format!(
            "GPU thread of {main} inside CUDA calls {} of {} while saturated ({} raw calls, longest gap {})",
            format::pct(1.0 - s.gap.idle_share),
            format::ns(s.len_ns()),
            format::count(s.gap.calls),
            format::ns(s.gap.max_gap_ns)
        ),
    ));
    steps.push(step(
        Layer::Gpu,
        format!("while saturated: {}", s.busy.text()),
    ));
    if let Some(w) = s.worst {
        steps.push(step(Layer::Cuda, symptom.to_string()));
        if !s.slow.is_empty() {
            steps.push(step(
                Layer::Cuda,
                format!(
                    "{} of {} slow calls (>= 10x their median) happened while CPU was saturated ({})",
                    s.slow_in_sat.len(),
                    s.slow.len(),
                    w.op
                ),
            ));
        }
    }
    steps
}

/// The preemption evidence of the GPU thread: its switches, off-CPU time and
/// run-queue wait (none without a wall-time breakdown of it).
fn preemption(ctx: &Context, main: i32, main_sw: &Totals) -> Option<String> {
    let s = ctx.starvation.as_ref()?;
    let preempt = match (s.preemptions, s.run_queue_wait_ns) {
        (Some(p), Some(w)) => format!(
            ", {} preemptions with {} waiting in the run queue",
            format::count(p),
            format::ns(w)
        ),
        _ => String::new(),
    };
    Some(format!(
        "GPU thread {} of {main}: {} context switches, {} off-CPU ({} of its wall time){preempt}; process total {} switches",
        s.gpu_thread,
        format::count(s.off_cpu_switches),
        format::ns(s.off_cpu_ns),
        format::pct(s.off_cpu_share),
        format::count(main_sw.count)
    ))
}
