//! GPU busy of one process over its span, and where its idle time lies:
//! measured by NVML where the capture has samples (the host-side bound
//! filling the stretches they do not cover), otherwise the host-side bound.

use super::bound::HostBound;
use super::process::ProcessSpans;
use crate::dataset::Dataset;
use crate::gpu_activity::{BusySource, MeasuredBusy};
use crate::intervals::{self, gaps, inside, total, union};

/// The busy figure and the idle pieces it leaves.
pub struct Busy {
    /// The NVML samples behind the figure, when the capture has them.
    pub measured: Option<MeasuredBusy>,
    /// GPU busy, ns, at most the span.
    pub busy_ns: i64,
    /// Part of the span the samples cover, ns (0 without samples).
    pub sampled_ns: i64,
    /// Idle time as `(start, end, idle ns)` pieces, by start.
    pub pieces: Vec<(i64, i64, f64)>,
}

impl Busy {
    /// Busy of the process over its span, with how it was found added to `basis`.
    pub fn of(ds: &Dataset, p: &ProcessSpans, bound: &HostBound, basis: &mut Vec<String>) -> Busy {
        match ds.gpu.measured_busy(p.pid, p.span) {
            Some(m) => measured(m, p, bound, basis),
            None => host_bound(bound, basis),
        }
    }
}

/// Busy from the samples where they cover the span and from the bound
/// elsewhere; each period's idle time placed by [`intervals::split_idle`].
fn measured(m: MeasuredBusy, p: &ProcessSpans, bound: &HostBound, basis: &mut Vec<String>) -> Busy {
    let span = p.span;
    let covered = union(
        m.periods.iter().map(|q| (q.start_ns, q.end_ns)).collect(),
        span,
    );
    let sampled_ns = total(&covered);
    let uncovered = gaps(&covered, span);
    let mut pieces: Vec<(i64, i64, f64)> = Vec::new();
    let mut b = m.busy_ns;
    for q in &m.periods {
        let idle = (q.end_ns - q.start_ns) as f64 * (1.0 - q.busy);
        pieces.extend(intervals::split_idle(
            &bound.busy,
            (q.start_ns, q.end_ns),
            idle,
        ));
    }
    for &(a, z) in &uncovered {
        b += inside(&bound.busy, (a, z));
        for &(ga, gz) in &bound.gaps {
            let (x, y) = (ga.max(a), gz.min(z));
            if y > x {
                pieces.push((x, y, (y - x) as f64));
            }
        }
    }
    pieces.sort_by_key(|piece| piece.0);
    measured_basis(&m, p, sampled_ns, basis);
    Busy {
        busy_ns: b.min(p.span_ns),
        sampled_ns,
        pieces,
        measured: Some(m),
    }
}

/// States which samples stand behind a measured figure and how its idle
/// time is shared out.
fn measured_basis(m: &MeasuredBusy, p: &ProcessSpans, sampled_ns: i64, basis: &mut Vec<String>) {
    let what = match m.source {
        BusySource::NvmlProcess => format!("NVML per-process SM samples of pid {}", p.pid),
        _ => format!("NVML device SM samples of GPU {}", m.gpu),
    };
    basis.push(format!(
        "GPU busy measured by the driver: {what}, {} periods covering {} of {} ns of the lifetime{}",
        m.periods.len(),
        sampled_ns,
        p.span_ns,
        if sampled_ns < p.span_ns {
            " (the rest: host-side upper bound)"
        } else {
            ""
        }
    ));
    if !m.others_on_gpu.is_empty() {
        basis.push(format!(
            "device samples also count other processes busy on GPU {}: {:?}",
            m.gpu, m.others_on_gpu
        ));
    }
    basis.push(
        "idle time in each sample period goes first to the stretches where no work was queued (the GPU cannot be busy there), the rest to the stretches with queued work; within each, it is shared among what the GPU thread was doing, in proportion to time, time inside synchronisations last"
            .to_string(),
    );
}

/// Without samples: busy is the host-side bound, idle is its gaps.
fn host_bound(bound: &HostBound, basis: &mut Vec<String>) -> Busy {
    basis.push(
        "no GPU utilisation samples in this capture: GPU busy is unknown; busy here is a host-side upper bound (inside CUDA calls, or with queued work outstanding until a synchronisation waited for it), so the idle share is a lower bound"
            .to_string(),
    );
    Busy {
        measured: None,
        busy_ns: bound.busy_ns,
        sampled_ns: 0,
        pieces: bound
            .gaps
            .iter()
            .map(|&(a, z)| (a, z, (z - a) as f64))
            .collect(),
    }
}
