//! Findings for idle time no mechanism explains, named by the code the GPU
//! thread was in.
//!
//! After every mechanism has taken the idle time its own evidence covers,
//! each part of the loop's idle split with time left over becomes a finding
//! of its own: what state the thread was in (on-CPU outside CUDA, blocked,
//! preempted, inside a class of CUDA call) and the code that stretch was
//! spent in, with the share of the part each piece of code explains. It
//! names no mechanism the evidence does not show; it says what the stacks
//! show and what would tell more. A part with no stack inside it still
//! becomes a finding, of the thread's state alone, saying what would name
//! the code. Start-up (before the first CUDA call) and
//! shutdown (after the last) are described in the idle breakdown, not
//! raised as findings about the loop.

use super::context::Context;
use crate::code::{CodeShare, PartCode};
use crate::finding::{CausalChain, Cause, ChainStep, Evidence, Severity};
use crate::finding::{Layer, Unit};
use crate::format;
use crate::idle::ProcessIdle;
use crate::idle_split::parts::{by_key, PARTS};

/// A part left over must hold at least this share of the loop's idle time
/// (idle time between the first and last CUDA call) to become a finding.
const MIN_SHARE: f64 = 0.03;
/// And at least this much time, ns.
const MIN_NS: i64 = 5_000_000;
/// Code groups named in a finding.
const NAMED: usize = 3;

/// Findings for the idle time left in `pool` (by part of the split), from
/// the code attribution of the main process's GPU thread. Takes what it
/// explains from `pool`.
pub fn detect(ctx: &Context, idle: &ProcessIdle, pool: &mut [i64]) -> Vec<CausalChain> {
    let loop_idle = idle.loop_idle_ns();
    if loop_idle <= 0 {
        return Vec::new();
    }
    let mut out = Vec::new();
    // Start-up and the tail hold nothing in the pool: they lie outside the loop.
    for (slot, key) in PARTS.iter().map(|p| p.key).enumerate() {
        let left = pool[slot];
        if left < MIN_NS || (left as f64) < MIN_SHARE * loop_idle as f64 {
            continue;
        }
        pool[slot] = 0;
        match idle
            .code
            .iter()
            .find(|p| p.key == key && !p.code.is_empty() && p.coverage > 0.0)
        {
            Some(part) => out.push(finding(ctx, idle, part, left, loop_idle)),
            None => out.push(state_only(ctx, idle, key, left, loop_idle)),
        }
    }
    out
}

/// How the thread spent the part, in words a reader acts on.
fn state_words(key: &str) -> &'static str {
    match key {
        "host_compute" => "running on the CPU outside CUDA calls",
        "page_alloc_storm" => {
            "running on the CPU outside CUDA while its process allocated fresh pages"
        }
        "off_cpu_preempted" => "preempted, waiting in the run queue for a CPU",
        "waiting_on_workers" => "blocked while DataLoader workers were alive",
        "off_cpu_blocked" => "blocked off the CPU",
        "off_cpu_unknown" => "off the CPU (the recorder did not say why)",
        "in_launch_calls" => "inside kernel launch calls",
        "in_alloc_free" => "inside CUDA allocation and free calls",
        "in_copies" => "inside CUDA copies and memsets",
        "in_sync" => "inside CUDA synchronisations with the GPU idle",
        "in_other_cuda" => "inside other CUDA calls",
        "between_calls" => "between CUDA calls less than 1 ms apart",
        _ => "in an unlabelled state",
    }
}

/// What to look at next, by state.
fn next_step(key: &str, top: &CodeShare) -> String {
    let code = top
        .path
        .user
        .as_ref()
        .map_or_else(|| top.owner.clone(), |u| u.label());
    match key {
        "off_cpu_blocked" | "off_cpu_unknown" | "waiting_on_workers" => format!(
            "The GPU waits while the training thread blocks in {code}{}. Find what it waits for (the \
             kernel frame names the wait), then take that wait off the GPU thread: run it in a \
             background thread or process, make it asynchronous, or do it less often. get_stacks \
             (category off_cpu, the GPU thread) shows the whole stacks.",
            top.path
                .kernel_kind()
                .map(|k| format!(" ({k})"))
                .unwrap_or_default()
        ),
        "off_cpu_preempted" => format!(
            "The GPU thread was ready to run but had no CPU, last in {code}. Find who holds the CPUs \
             (get_per_process_breakdown): give the job more cores, fewer competing threads or \
             processes, or pin the GPU thread to a core of its own."
        ),
        "in_launch_calls" | "in_alloc_free" | "in_copies" | "in_sync" | "in_other_cuda" => format!(
            "The time is inside CUDA calls made from {code}; get_events for those calls and \
             get_stacks (category in_cuda) show which call and how often. Calls that wait for the \
             GPU or allocate in every step can often be removed, batched or made asynchronous."
        ),
        _ => format!(
            "The GPU waits while the training thread runs {code} on the CPU. Check that this \
             work must happen on the GPU thread in every step: move it off the thread (DataLoader \
             workers, a background thread), do it less often, or make it cheaper; get_stacks \
             (category on_cpu, the GPU thread) shows the whole stacks."
        ),
    }
}

/// A finding for a part no stack falls in: the state, its time, and what
/// to record to see the code.
fn state_only(
    ctx: &Context,
    idle: &ProcessIdle,
    key: &str,
    left: i64,
    loop_idle: i64,
) -> CausalChain {
    let words = state_words(key);
    let share = left as f64 / loop_idle.max(1) as f64;
    let stacks_recorded = !ctx.ds.waits.is_empty() || !ctx.ds.thread_samples.is_empty();
    let why = if stacks_recorded {
        "this capture has stacks, but none fell inside this part of the GPU thread's time"
    } else {
        "this capture has no stacks (recorded with stacks off, or by a recorder without them)"
    };
    let part_label = by_key(key).map_or(key, |p| p.label);
    CausalChain {
        id: String::new(),
        cause: Cause::IdleCode,
        severity: Severity::Low,
        score: 0.0,
        explained_ns: left,
        explained_share: share,
        summary: format!(
            "GPU idle {} ({} of the loop's idle time) while GPU thread {} was {}; no stack shows the code",
            format::ns(left),
            format::pct(share),
            idle.gpu_thread,
            words
        ),
        root_cause: format!(
            "GPU thread {} was {words} for {} ({} of the loop's idle time; part {key}), and no \
             mechanism's evidence covers it; no code can be named: {why}. The idle split measures \
             the state ({part_label}) from the thread's context switches and CUDA calls; which \
             function the thread was in is unknown.",
            idle.gpu_thread,
            format::ns(left),
            format::pct(share)
        ),
        steps: vec![
            ChainStep {
                layer: Layer::Host,
                detail: format!("GPU thread {} {} for {}", idle.gpu_thread, words, format::ns(left)),
            },
            ChainStep {
                layer: Layer::Gpu,
                detail: format!(
                    "idle {} of the {} the loop left it idle",
                    format::ns(left),
                    format::ns(loop_idle)
                ),
            },
        ],
        evidence: vec![Evidence::new(
            "unclaimed_time",
            left as f64,
            Unit::Ns,
            "idle split less other findings",
        )],
        affected_ops: Vec::new(),
        victim_pid: ctx.main,
        culprit_pids: Vec::new(),
        start_offset_s: ((idle_start(ctx, idle) - ctx.ds.span.start_ns) as f64 / 1e9).max(0.0),
        end_offset_s: ((idle_end(ctx, idle) - ctx.ds.span.start_ns) as f64 / 1e9).max(0.0),
        fix: format!(
            "Record the job again with stacks (ingero trace records them by default: leave \
             --stack-hz above 0 and --no-offcpu-stacks unset; `ingero check` says whether stacks \
             can be captured here) so the off-CPU stacks and on-CPU samples of the GPU thread name \
             the code; get_stacks for the GPU thread then shows it. Meanwhile get_events around the longest gaps shows which CUDA \
             calls bracket the {} of {}.",
            format::ns(left),
            part_label
        ),
        code: Vec::new(),
        part: Some(key.to_string()),
        loop_cost_ns: 0,
    }
}

fn finding(
    ctx: &Context,
    idle: &ProcessIdle,
    part: &PartCode,
    left: i64,
    loop_idle: i64,
) -> CausalChain {
    let named: Vec<&CodeShare> = part.code.iter().take(NAMED).collect();
    let top = named[0];
    let words = state_words(&part.key);
    let listing: Vec<String> = named
        .iter()
        .map(|c| format!("{} in {}", format::pct(c.share_of_part), c.text))
        .collect();
    let summary = format!(
        "GPU idle {} ({} of the loop's idle time) while GPU thread {} was {}: {} in {}",
        format::ns(left),
        format::pct(left as f64 / loop_idle.max(1) as f64),
        idle.gpu_thread,
        words,
        format::pct(top.share_of_part),
        top.text
    );
    let per_step = idle
        .per_step
        .as_ref()
        .map(|p| p.notable())
        .filter(|v| !v.is_empty())
        .map(|v| format!(" Per step the loop also makes {}.", v.join(", ")))
        .unwrap_or_default();
    let root_cause = format!(
        "GPU thread {} was {words} for {} ({} of the loop's idle time; part {}), and no \
         mechanism's evidence covers it; the stacks show where it went: {}. {} of this part had a \
         stack to read ({}).{per_step}",
        idle.gpu_thread,
        format::ns(left),
        format::pct(left as f64 / loop_idle.max(1) as f64),
        part.key,
        listing.join("; "),
        format::pct(part.coverage),
        part.basis
    );
    let steps = vec![
        ChainStep {
            layer: Layer::Code,
            detail: format!(
                "{} ({} of this part)",
                top.text,
                format::pct(top.share_of_part)
            ),
        },
        ChainStep {
            layer: Layer::Host,
            detail: format!(
                "GPU thread {} {} for {}",
                idle.gpu_thread,
                words,
                format::ns(part.idle_ns)
            ),
        },
        ChainStep {
            layer: Layer::Gpu,
            detail: format!(
                "idle {} of the {} the loop left it idle",
                format::ns(left),
                format::ns(loop_idle)
            ),
        },
    ];
    let mut evidence = vec![
        Evidence::new(
            "part_idle_time",
            part.idle_ns as f64,
            Unit::Ns,
            "idle split by thread state",
        ),
        Evidence::new(
            "unclaimed_time",
            left as f64,
            Unit::Ns,
            "idle split less other findings",
        ),
        Evidence::new(
            "stack_coverage",
            part.coverage,
            Unit::Ratio,
            "stack samples inside the part",
        ),
    ];
    for (i, c) in named.iter().enumerate() {
        evidence.push(Evidence::new(
            format!("code_{}_time", i + 1),
            c.idle_ns as f64,
            Unit::Ns,
            "stack samples inside the part",
        ));
    }
    let start = ctx.ds.span.start_ns;
    CausalChain {
        id: String::new(),
        cause: Cause::IdleCode,
        severity: Severity::Low,
        score: 0.0,
        explained_ns: left,
        explained_share: left as f64 / loop_idle.max(1) as f64,
        summary,
        root_cause,
        steps,
        evidence,
        affected_ops: Vec::new(),
        victim_pid: ctx.main,
        culprit_pids: Vec::new(),
        start_offset_s: ((idle_start(ctx, idle) - start) as f64 / 1e9).max(0.0),
        end_offset_s: ((idle_end(ctx, idle) - start) as f64 / 1e9).max(0.0),
        fix: next_step(&part.key, top),
        code: part.code.clone(),
        part: Some(part.key.clone()),
        loop_cost_ns: 0,
    }
}

/// The loop's stretch: the process's first to last CUDA call.
fn idle_start(ctx: &Context, idle: &ProcessIdle) -> i64 {
    ctx.ds
        .activity
        .iter()
        .filter(|a| a.pid == idle.pid)
        .map(|a| a.start_ns)
        .min()
        .unwrap_or(ctx.ds.span.start_ns)
}

fn idle_end(ctx: &Context, idle: &ProcessIdle) -> i64 {
    ctx.ds
        .activity
        .iter()
        .filter(|a| a.pid == idle.pid)
        .map(|a| a.end_ns)
        .max()
        .unwrap_or(ctx.ds.span.end_ns)
}
