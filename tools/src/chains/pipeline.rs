//! The GPU idles while the thread that feeds it works on the CPU outside
//! CUDA calls.
//!
//! What that work is needs its own evidence. DataLoader worker processes of
//! the GPU process show the job feeds itself through a DataLoader, so the
//! on-CPU time is named as its input pipeline (`host_input_pipeline`).
//! Without such evidence the finding says only what is known, on-CPU time
//! outside CUDA with the cause not identified (`host_compute`), and what
//! would tell (stack samples of the thread).

use super::build::{chain, impact_points};
use super::context::Context;
use super::measured::BusyFigure;
use crate::finding::{step, CausalChain, Cause, Evidence};
use crate::finding::{Layer, Unit};
use crate::format;
use crate::pyframes::{PyActivity, PyProfile};
use ingero_store::HostKind;

const FIX_UNKNOWN: &str =
    "Find what the GPU thread computes between its CUDA calls before changing \
anything: record with stack samples on (ingero trace, then get_stacks for the on-CPU host wait) or \
profile the loop with py-spy; then move that work off the GPU thread (into DataLoader workers, \
vectorised tensor ops, or precomputation) or overlap it with GPU work.";

const FIX_FRAMES: &str = "Start from the functions named: get_stacks (category on_cpu, the GPU \
thread) shows the whole stacks behind them. Work that repeats every step can move off the GPU \
thread (DataLoader workers, a background thread for non-Python work), become vectorised tensor \
operations, or be computed once; a one-off phase (imports, model construction) is start-up cost: \
keep it out of measurements or keep the process alive between jobs.";

const FIX_IN_THREAD: &str = "Prepare batches off the GPU thread: give the DataLoader worker \
processes (num_workers > 0, persistent_workers=True, a prefetch_factor) so fetch and collate \
overlap GPU work; for data already in memory as tensors, slice whole batches instead of \
fetching and collating sample by sample (a BatchSampler with batch_size=None on the DataLoader, \
or indexing a shuffled index tensor).";

const FIX: &str = "Make each batch cheaper to build: for data already in memory, draw one \
permutation per epoch (torch.randperm) and slice whole batches from the tensor instead of \
fetching and collating samples one by one; with a Dataset, pass a BatchSampler so \
__getitem__ receives all indices of a batch at once (batch_size=None on the DataLoader).";

/// Detects a GPU left idle by CPU-side input preparation in its own thread.
pub fn detect(ctx: &Context) -> Option<CausalChain> {
    let ds = ctx.ds;
    let main = ctx.main?;
    let idle = ctx.main_idle()?;
    let c = &idle.causes;
    let feeding = idle.host_wait_ns - c.before_first_call_ns - c.after_last_call_ns;
    // Judge the loop itself: start-up before the first CUDA call and the tail
    // after the last one are reported, but do not make a pipeline problem.
    if idle.active_idle_share < 0.5 || feeding <= 0 {
        return None;
    }
    let on_cpu = c.host_compute_ns + c.page_alloc_storm_ns;
    let compute_share = on_cpu as f64 / feeding as f64;
    if compute_share < 0.5 {
        return None;
    }
    let pages = ds.host_totals(HostKind::PageAlloc, Some(main));
    // Evidence of a DataLoader: worker processes forked by the GPU process.
    let workers = ctx.dataloader_workers(main);
    // Or Python stack samples of the GPU thread inside torch.utils.data
    // (a DataLoader fetching in the training thread, num_workers=0).
    let profile = ds.py_profiles.get(&(main, idle.gpu_thread));
    let (in_loader, py_samples) =
        profile.map_or((0, 0), |p| (p.active_of(PyActivity::Loader), p.active));
    let frames_say = py_samples >= 20 && in_loader as f64 >= 0.2 * py_samples as f64;
    let frames_text = profile.filter(|p| p.active >= 20).map(PyProfile::describe);
    let stacks_recorded = !ds.waits.is_empty() || profile.is_some();
    // Workers alone do not make the on-CPU time a loader's: where the GPU
    // thread's Python stacks were sampled, they must show DataLoader code.
    let frames_known = py_samples >= 20;
    let loader = frames_say || (!workers.is_empty() && !frames_known);
    let period = idle.step_period_ns;
    let evidence_pts = 30.0 * idle.active_idle_share
        + 20.0 * compute_share.min(1.0)
        + if idle.long_gaps > 0 || period.is_some_and(|p| p >= 100_000_000) {
            10.0
        } else {
            0.0
        };
    let score = evidence_pts + impact_points(idle.active_idle_share * compute_share);
    let period_text = if idle.long_gaps > 0 {
        format!(", {} idle gaps >= 500 ms", idle.long_gaps)
    } else {
        period.map_or_else(String::new, |p| {
            format!(", median {} between synchronisations", format::ns(p))
        })
    };
    let busy = BusyFigure::of_idle(idle);
    // Without samples the idle share is a lower bound: say so where it is stated.
    let idle_basis = if busy.is_measured() {
        busy.source_label().to_string()
    } else {
        "at least: host-side bound, no GPU samples".to_string()
    };
    let mechanism = if loader {
        let seen = if workers.is_empty() {
            format!(
                "{in_loader} of {py_samples} running Python stack samples of the GPU thread inside torch.utils.data"
            )
        } else {
            format!("{} worker process(es) of {main} seen", workers.len())
        };
        format!(
            "host-side input pipeline (the job's DataLoader: {seen}; the per-sample fetch/collate of the batches it waits for)"
        )
    } else if let Some(t) = &frames_text {
        format!("no mechanism identified (no DataLoader workers or frames); the GPU thread's Python samples: {t}")
    } else if stacks_recorded {
        "cause not identified from this capture (no DataLoader workers, no Python samples of the GPU thread: see get_stacks for its native frames)".to_string()
    } else {
        "cause not identified from this capture (no DataLoader workers, no stack samples: record with stack samples to see the functions)".to_string()
    };
    let summary = format!(
        "GPU idle {} of {} ({idle_basis}; {} between its first and last CUDA call) <- GPU thread {} busy on the CPU outside CUDA for {}{period_text} <- {mechanism}",
        format::pct(idle.idle_share),
        format::ns(idle.span_ns),
        format::pct(idle.active_idle_share),
        idle.gpu_thread,
        format::ns(on_cpu)
    );
    let page_text = if pages.count > 0 {
        format!(
            ", with {} page allocations while it runs",
            format::count(pages.count)
        )
    } else {
        String::new()
    };
    let root_cause = if loader {
        format!(
            "The host-side input pipeline: {main}'s GPU thread spends {} on the CPU outside CUDA calls between them (where its DataLoader prepares batches: per-sample fetch and collate{page_text}), and the GPU is left without work much of the time: {}.",
            format::ns(on_cpu),
            busy.text()
        )
    } else {
        format!(
            "{main}'s GPU thread spends {} on the CPU outside CUDA calls between them{page_text}, and the GPU is left without work much of the time: {}. {}",
            format::ns(on_cpu),
            busy.text(),
            match &frames_text {
                Some(t) => format!(" No DataLoader worker processes or frames; its running Python samples: {t}."),
                None if stacks_recorded => " What that work is, this capture does not say: no DataLoader worker processes and no Python samples of the thread.".to_string(),
                None => " What that work is, this capture cannot tell: no DataLoader worker processes and no stack samples.".to_string(),
            }
        )
    };
    let mut steps = vec![
        step(Layer::Gpu, busy.text()),
        step(
            Layer::Cuda,
            format!(
                "inside CUDA calls {} of the {}; GPU idle {} of it",
                format::ns(idle.api_ns),
                format::ns(idle.span_ns),
                format::pct(idle.idle_share)
            ),
        ),
        step(
            Layer::Host,
            format!(
                "host wait {}: on-CPU outside CUDA {} ({} of the time between its calls), off-CPU {}, before the first call {}, after the last {}",
                format::ns(idle.host_wait_ns),
                format::ns(on_cpu),
                format::pct(compute_share),
                format::ns(
                    c.off_cpu_preempted_ns
                        + c.off_cpu_blocked_ns
                        + c.off_cpu_unknown_ns
                        + c.waiting_on_workers_ns
                ),
                format::ns(c.before_first_call_ns),
                format::ns(c.after_last_call_ns)
            ),
        ),
    ];
    if idle.long_gaps > 0 {
        steps.push(step(
            Layer::Cuda,
            format!(
                "{} idle gaps >= 500 ms totalling {}; GPU under 50% busy in {} of {} chunks ({})",
                idle.long_gaps,
                format::ns(idle.long_gaps_ns),
                idle.utilization.low_chunks,
                idle.utilization.chunks,
                idle.utilization.basis
            ),
        ));
    }
    if pages.count > 0 {
        steps.push(step(
            Layer::Host,
            format!(
                "{} page allocations ({}) in {main} while its GPU thread works on the CPU",
                format::count(pages.count),
                format::bytes(pages.sum_bytes)
            ),
        ));
    }
    let mut evidence = vec![
        Evidence::new(
            "gpu_idle_share",
            idle.idle_share * 100.0,
            Unit::Percent,
            busy.source_label(),
        ),
        Evidence::new("lifetime", idle.span_ns as f64, Unit::Ns, "raw rows"),
        Evidence::new(
            "gpu_busy",
            idle.busy_ns as f64,
            Unit::Ns,
            busy.source_label(),
        ),
        Evidence::new(
            "gpu_busy_share",
            busy.share() * 100.0,
            Unit::Percent,
            busy.source_label(),
        ),
        Evidence::new(
            "cuda_api_time",
            idle.api_ns as f64,
            Unit::Ns,
            "raw rows and aggregates",
        ),
        Evidence::new("host_compute", on_cpu as f64, Unit::Ns, "raw rows"),
        Evidence::new(
            "host_compute_share_of_wait",
            compute_share * 100.0,
            Unit::Percent,
            "raw rows",
        ),
        Evidence::new(
            "long_idle_gaps",
            idle.long_gaps as f64,
            Unit::Count,
            "raw rows",
        ),
        Evidence::new(
            "main_page_allocs",
            pages.count as f64,
            Unit::Count,
            "aggregates",
        ),
    ];
    if busy.is_measured() {
        evidence.push(Evidence::new(
            "gpu_sampled",
            idle.sampled_ns as f64,
            Unit::Ns,
            busy.source_label(),
        ));
        evidence.push(Evidence::new(
            "gpu_busy_host_bound",
            idle.host_bound_busy_ns as f64,
            Unit::Ns,
            "host-side bound (CUDA activity spans)",
        ));
    }
    if let Some(p) = period {
        evidence.push(Evidence::new("step_period", p as f64, Unit::Ns, "raw rows"));
    }
    let start = ds.window.lo_ns.max(ds.span.start_ns);
    Some(chain(
        ctx,
        if loader {
            Cause::HostInputPipeline
        } else {
            Cause::HostCompute
        },
        score,
        summary,
        root_cause,
        steps,
        evidence,
        Vec::new(),
        vec![main],
        (start, start + idle.span_ns),
        if !loader {
            if frames_text.is_some() {
                FIX_FRAMES
            } else {
                FIX_UNKNOWN
            }
        } else if workers.is_empty() {
            FIX_IN_THREAD
        } else {
            FIX
        },
    ))
}
