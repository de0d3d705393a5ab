//! CPU contention: the GPU thread loses its core to other runnable work,
//! either the job's own DataLoader workers or unrelated processes.

use super::context::{Context, SATURATED_PCT};
use super::measured::busy_over;
use super::{chain, impact_points, step, CausalChain, Cause, Evidence};
use crate::format;
use crate::processes::Role;
use ingero_store::{AggSource, HostKind};

const FIX_WORKERS: &str = "Take per-sample work out of the input pipeline: for data already in memory, index \
pre-shuffled tensors directly (torch.randperm once per epoch, then slice batches) or use batched sampling \
(a BatchSampler so each fetch returns a whole batch); if workers stay, keep num_workers below the number of \
free cores and give the training process its own core (taskset or a cpuset).";

const FIX_EXTERNAL: &str = "Give the training process CPU time it does not have to fight for: move or \
throttle the competing processes (nice -n 19, a cgroup CPU quota), or reserve cores for the trainer \
(taskset/cpuset) so its launch thread is never queued behind them.";

/// Detects CPU contention around the main GPU process.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let secs = ds.window_secs().max(1e-3);
    let mut helpers: Vec<(i32, i64, i64)> = Vec::new(); // pid, switches, page allocs
    let mut external: Vec<(i32, i64, i64)> = Vec::new();
    for pid in ds.all_pids() {
        if ctx.cuda_pids.contains(&pid) {
            continue;
        }
        let sw = ds.host_totals(HostKind::SchedSwitch, Some(pid)).count;
        let pages = ds.host_totals(HostKind::PageAlloc, Some(pid)).count;
        if sw == 0 {
            continue;
        }
        let role = ctx.role(pid);
        if role.is_job_helper() && (ds.descends_from(pid, main) || ctx.mains.len() == 1) {
            helpers.push((pid, sw, pages));
        } else if role == Role::External {
            external.push((pid, sw, pages));
        }
    }
    helpers.sort_by_key(|h| std::cmp::Reverse(h.1));
    external.sort_by_key(|h| std::cmp::Reverse(h.1));
    let helper_sw: i64 = helpers.iter().map(|h| h.1).sum();
    let ext_sw: i64 = external.iter().map(|h| h.1).sum();
    let contender_rate = (helper_sw + ext_sw) as f64 / secs;
    let sat = &ctx.sat;
    let saturated = sat.share() >= 0.1 || (sat.samples == 0 && contender_rate >= 200.0);
    if !saturated || helper_sw + ext_sw == 0 {
        return None;
    }
    // Where the CPU was saturated (or the whole window when there are no samples).
    let sat_span = match (sat.times.first(), sat.times.last()) {
        (Some(a), Some(b)) => ((*a - ctx.sample_interval_ns).max(ds.window.lo_ns), *b),
        _ => (ds.window.lo_ns, ds.window.hi_ns),
    };
    let gap = submission_gap(ctx, sat_span);
    let busy = busy_over(ctx, main, sat_span);
    // How idle the GPU was while saturated: measured where NVML samples
    // exist; otherwise the share of time the GPU thread was outside CUDA
    // calls stands in (a host-side figure, stated as such).
    let gpu_idle = if busy.is_measured() {
        1.0 - busy.share()
    } else {
        gap.idle_share
    };
    let slow = ctx.slow_calls();
    let slow_in_sat: Vec<_> = slow
        .iter()
        .copied()
        .filter(|c| sat.samples == 0 || sat.covers(c.ts_ns, ctx.sample_interval_ns))
        .collect();
    // The symptom is the heaviest tail among ops slowed while saturated.
    let worst = ctx.symptoms.iter().find(|s| {
        s.tail_ratio.is_some_and(|r| r >= 5.0)
            && slow_in_sat.iter().any(|c| ds.op_name(c.op_id) == s.op)
    });
    let ratio = worst.and_then(|w| w.tail_ratio).unwrap_or(1.0);
    let off_share = ctx.starvation.as_ref().map_or(0.0, |s| s.off_cpu_share);
    if worst.is_none() && off_share < 0.05 && gpu_idle < 0.5 {
        return None;
    }
    let corr = if slow.is_empty() {
        0.0
    } else {
        slow_in_sat.len() as f64 / slow.len() as f64
    };
    let evidence_pts = 20.0 * sat.share()
        + if sat.peak_pct >= 99.0 { 5.0 } else { 0.0 }
        + 15.0 * (ratio.max(1.0).log10() / 2.5).min(1.0).max(gpu_idle * 0.6)
        + 15.0 * (contender_rate / 1000.0).min(1.0)
        + 5.0 * corr;
    let off_ns = ctx.starvation.as_ref().map_or(0, |s| s.off_cpu_ns);
    // Lost time: the GPU thread off-CPU, slowed calls, and (when it barely
    // submitted work while the CPU was saturated) the idle stretch itself.
    let lost = (off_ns + ctx.slow_excess_ns(&slow_in_sat)) as f64;
    let idle_lost = gpu_idle * (sat_span.1 - sat_span.0) as f64;
    let impact = lost.max(idle_lost) / ctx.wall_ns().max(sat_span.1 - sat_span.0) as f64;
    let score = evidence_pts + impact_points(impact);

    // The job's own children win the blame when they switch more; they are
    // DataLoader contention only when some of them are DataLoader workers.
    let own_children = helper_sw >= ext_sw;
    let has_workers = helpers
        .iter()
        .any(|h| matches!(ctx.role(h.0), Role::DataloaderWorker | Role::PinMemory));
    let workers = own_children && has_workers;
    let (cause, group, culprits) = if own_children {
        (
            if workers {
                Cause::DataloaderWorkerContention
            } else {
                Cause::CpuContention
            },
            &helpers,
            helpers.iter().map(|h| h.0).collect::<Vec<_>>(),
        )
    } else {
        (
            Cause::CpuContention,
            &external,
            external.iter().map(|h| h.0).collect::<Vec<_>>(),
        )
    };
    let group_sw: i64 = group.iter().map(|h| h.1).sum();
    let group_pages: i64 = group.iter().map(|h| h.2).sum();
    let n_workers = group
        .iter()
        .filter(|h| ctx.role(h.0) == Role::DataloaderWorker)
        .count();
    let who = if workers {
        format!("{n_workers} DataLoader worker(s) of {main}")
    } else if own_children {
        format!(
            "{} child process(es) of {main} (not DataLoader workers)",
            group.len()
        )
    } else {
        let names: Vec<String> = group
            .iter()
            .take(3)
            .map(|h| format!("{} ({})", ds.comm(h.0), h.0))
            .collect();
        format!("processes outside the job: {}", names.join(", "))
    };
    let main_sw = ds.host_totals(HostKind::SchedSwitch, Some(main));
    let st = ctx.starvation.as_ref();
    let gap_text = format!(
        "GPU thread of {main} inside CUDA calls {} of {} while saturated ({} raw calls, longest gap {})",
        format::pct(1.0 - gap.idle_share),
        format::ns(sat_span.1 - sat_span.0),
        format::count(gap.calls),
        format::ns(gap.max_gap_ns)
    );
    let symptom_text = match worst {
        Some(w) => format!(
            "{} p99 {} ({:.0}x p50 {})",
            w.op,
            format::opt_ns(w.p99_ns),
            ratio,
            format::opt_ns(w.p50_ns)
        ),
        None if busy.is_measured() && gpu_idle >= 0.5 => {
            format!("{} while saturated", busy.text())
        }
        None if gpu_idle >= 0.5 => format!(
            "GPU thread of {main} inside CUDA calls only {} of the saturated {}",
            format::pct(1.0 - gap.idle_share),
            format::ns(sat_span.1 - sat_span.0)
        ),
        None => "GPU thread off-CPU".to_string(),
    };
    let cpu_text = if sat.samples > 0 {
        format!(
            "CPU >= {SATURATED_PCT:.0}% in {} of {} samples (peak {:.0}%)",
            sat.saturated, sat.samples, sat.peak_pct
        )
    } else {
        "no CPU samples".to_string()
    };
    let summary = format!(
        "{symptom_text} <- {cpu_text} <- {who}: {} context switches",
        format::count(group_sw)
    );
    let busy_text = busy.text();
    let victim_text = if off_share >= 0.05 && busy.is_measured() && gpu_idle < 0.2 {
        format!(
            "so the GPU thread of {main} waits for a core ({} of its time off-CPU), though the GPU stayed busy ({busy_text})",
            format::pct(off_share)
        )
    } else if off_share >= 0.05 {
        format!(
            "so the GPU thread of {main} waits for a core ({} of its time off-CPU) and the GPU waits for it ({busy_text})",
            format::pct(off_share)
        )
    } else if busy.is_measured() && gpu_idle < 0.5 {
        format!("and {main}'s CUDA calls slow down meanwhile ({busy_text})")
    } else {
        format!(
            "and the GPU thread of {main} was inside CUDA calls only {} of that time ({busy_text}): it waits on a starved pipeline rather than submitting work",
            format::pct(1.0 - gap.idle_share)
        )
    };
    let root_cause = if workers {
        format!(
            "CPU contention by the job's own input pipeline: {who} keep every core busy ({} context switches, {} page allocations), {victim_text}.",
            format::count(group_sw),
            format::count(group_pages)
        )
    } else {
        format!(
            "CPU contention: {who} keep the cores busy ({} context switches), {victim_text}.",
            format::count(group_sw)
        )
    };
    let mut steps = vec![step("SYSTEM", cpu_text.clone())];
    steps.push(step(
        "HOST",
        format!(
            "{who}: {} context switches, {} page allocations",
            format::count(group_sw),
            format::count(group_pages)
        ),
    ));
    if let Some(s) = st {
        let preempt = match (s.preemptions, s.run_queue_wait_ns) {
            (Some(p), Some(w)) => format!(
                ", {} preemptions with {} waiting in the run queue",
                format::count(p),
                format::ns(w)
            ),
            _ => String::new(),
        };
        steps.push(step(
            "HOST",
            format!(
                "GPU thread {} of {main}: {} context switches, {} off-CPU ({} of its wall time){preempt}; process total {} switches",
                s.gpu_thread,
                format::count(s.off_cpu_switches),
                format::ns(s.off_cpu_ns),
                format::pct(s.off_cpu_share),
                format::count(main_sw.count)
            ),
        ));
    }
    steps.push(step("CUDA", gap_text));
    steps.push(step("GPU", format!("while saturated: {busy_text}")));
    if let Some(w) = worst {
        steps.push(step("CUDA", symptom_text.clone()));
        if !slow.is_empty() {
            steps.push(step(
                "CUDA",
                format!(
                    "{} of {} slow calls (>= 10x their median) happened while CPU was saturated ({})",
                    slow_in_sat.len(),
                    slow.len(),
                    w.op
                ),
            ));
        }
    }
    let mut evidence = vec![
        Evidence::new(
            "cpu_saturated_samples",
            sat.saturated as f64,
            "count",
            "system snapshots",
        ),
        Evidence::new(
            "cpu_samples",
            sat.samples as f64,
            "count",
            "system snapshots",
        ),
        Evidence::new("cpu_peak", sat.peak_pct, "percent", "system snapshots"),
        Evidence::new(
            "contender_context_switches",
            group_sw as f64,
            "count",
            "aggregates",
        ),
        Evidence::new(
            "contender_page_allocs",
            group_pages as f64,
            "count",
            "aggregates",
        ),
        Evidence::new(
            "contender_processes",
            group.len() as f64,
            "count",
            "process table",
        ),
        Evidence::new(
            "main_context_switches",
            main_sw.count as f64,
            "count",
            "aggregates",
        ),
        Evidence::new(
            "main_off_cpu_max",
            main_sw.max_dur_ns as f64,
            "ns",
            "aggregates",
        ),
        Evidence::new("slow_calls", slow.len() as f64, "count", "raw rows"),
        Evidence::new(
            "slow_calls_while_saturated",
            slow_in_sat.len() as f64,
            "count",
            "raw rows",
        ),
    ];
    if let Some(s) = st {
        evidence.push(Evidence::new(
            "gpu_thread_off_cpu",
            s.off_cpu_ns as f64,
            "ns",
            "raw rows",
        ));
        evidence.push(Evidence::new(
            "gpu_thread_off_cpu_share",
            s.off_cpu_share * 100.0,
            "percent",
            "raw rows",
        ));
    }
    if let Some(w) = worst {
        evidence.push(Evidence::new(
            format!("{}_p50", w.op),
            w.p50_ns.unwrap_or(0) as f64,
            "ns",
            "raw rows",
        ));
        evidence.push(Evidence::new(
            format!("{}_p99", w.op),
            w.p99_ns.unwrap_or(0) as f64,
            "ns",
            "raw rows",
        ));
        evidence.push(Evidence::new(
            format!("{}_tail_ratio", w.op),
            ratio,
            "ratio",
            "raw rows",
        ));
    }
    evidence.push(Evidence::new(
        "gpu_busy_share_while_saturated",
        busy.share() * 100.0,
        "percent",
        busy.source_label(),
    ));
    evidence.push(Evidence::new(
        "cuda_call_share_while_saturated",
        (1.0 - gap.idle_share) * 100.0,
        "percent",
        "raw rows",
    ));
    evidence.push(Evidence::new(
        "cuda_calls_while_saturated",
        gap.calls as f64,
        "count",
        "raw rows",
    ));
    evidence.push(Evidence::new(
        "longest_submission_gap",
        gap.max_gap_ns as f64,
        "ns",
        "raw rows",
    ));
    let span = sat_span;
    let affected: Vec<String> = ctx
        .symptoms
        .iter()
        .filter(|s| s.tail_ratio.unwrap_or(0.0) >= 5.0)
        .map(|s| s.op.clone())
        .collect();
    Some(chain(
        ctx,
        cause,
        score,
        summary,
        root_cause,
        steps,
        evidence,
        affected,
        culprits,
        span,
        if workers { FIX_WORKERS } else { FIX_EXTERNAL },
    ))
}

/// How busy the GPU thread kept the GPU inside a time span.
struct SubmissionGap {
    /// Raw CUDA calls of the main process in the span.
    calls: i64,
    /// Longest stretch without a call in progress, ns.
    max_gap_ns: i64,
    /// Share of the span with no CUDA call in progress.
    idle_share: f64,
}

fn submission_gap(ctx: &Context, span: (i64, i64)) -> SubmissionGap {
    let len = (span.1 - span.0).max(1);
    let mut busy = 0i64;
    let mut calls = 0i64;
    let mut max_gap = 0i64;
    let mut cursor = span.0;
    for c in ctx.main_calls() {
        let (a, b) = (c.ts_ns.max(span.0), (c.ts_ns + c.dur_ns).min(span.1));
        if b < span.0 || a > span.1 {
            continue;
        }
        calls += 1;
        max_gap = max_gap.max(a - cursor);
        if b > cursor {
            busy += b - a.max(cursor);
            cursor = b;
        }
    }
    max_gap = max_gap.max(span.1 - cursor);
    // When the recorder kept only a sample of the calls, scale the busy time
    // by how much the totals exceed the kept rows.
    if let Some(main) = ctx.main {
        let totals = ctx.ds.totals(AggSource::Cuda, None, Some(main));
        if totals.count > totals.stored {
            let raw: i64 = ctx.main_calls().map(|c| c.dur_ns).sum();
            if raw > 0 {
                busy = (busy as f64 * totals.sum_dur_ns as f64 / raw as f64) as i64;
            }
        }
    }
    SubmissionGap {
        calls,
        max_gap_ns: max_gap,
        idle_share: 1.0 - (busy as f64 / len as f64).min(1.0),
    }
}
