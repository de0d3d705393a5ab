//! The GPU busy figure a chain states, and where it comes from: NVML's
//! samples when the capture has them (named as such), otherwise the
//! host-side upper bound (the process's CUDA activity spans), said to be a
//! bound. Every figure is a share of a stated whole.

use super::context::Context;
use crate::activity::ActivityOrigin;
use crate::format;
use crate::gpu_activity::BusySource;
use crate::idle::ProcessIdle;
use ingero_store::AggSource;

/// How busy the GPU was for one process over one stretch.
#[derive(Debug, Clone, PartialEq)]
pub struct BusyFigure {
    /// Where `busy_ns` comes from.
    pub source: BusySource,
    /// GPU the samples belong to (none for the host-side bound).
    pub gpu: Option<u32>,
    /// Process the figure is about.
    pub pid: i32,
    /// GPU busy, ns: measured where sampled, the host-side bound elsewhere.
    pub busy_ns: i64,
    /// The whole `busy_ns` is a share of, ns.
    pub whole_ns: i64,
    /// Part of the whole the GPU samples cover, ns (0 for the bound).
    pub sampled_ns: i64,
    /// Other processes the device samples count too.
    pub others_on_gpu: Vec<i32>,
    /// True when the host-side bound had to be scaled for calls the
    /// recorder counted but did not keep (so it is an estimate).
    pub scaled: bool,
}

impl BusyFigure {
    /// The figure of the GPU-idle breakdown of a process (its lifetime).
    pub fn of_idle(p: &ProcessIdle) -> BusyFigure {
        BusyFigure {
            source: p.busy_source,
            gpu: p.gpu,
            pid: p.pid,
            busy_ns: p.busy_ns,
            whole_ns: p.span_ns.max(1),
            sampled_ns: p.sampled_ns,
            others_on_gpu: p.others_on_gpu.clone(),
            scaled: false,
        }
    }

    /// True when NVML samples stand behind the figure.
    pub fn is_measured(&self) -> bool {
        self.source != BusySource::HostBound
    }

    /// Busy share of the whole, 0-1.
    pub fn share(&self) -> f64 {
        (self.busy_ns as f64 / self.whole_ns.max(1) as f64).clamp(0.0, 1.0)
    }

    /// Which data the figure was computed from, for an evidence item.
    pub fn source_label(&self) -> &'static str {
        match self.source {
            BusySource::NvmlProcess => "NVML per-process samples",
            BusySource::NvmlDevice => "NVML device samples",
            BusySource::HostBound => "host-side bound (CUDA activity spans)",
        }
    }

    /// The figure in words: `NVML: SM busy 34.0% of the 6.10 s (per-process
    /// samples of pid 100)`, or `GPU busy at most 80.0% of the 6.10 s —
    /// host-side bound, no GPU samples`.
    pub fn text(&self) -> String {
        let whole = format::ns(self.whole_ns);
        let share = format::pct(self.share());
        match self.source {
            BusySource::HostBound => format!(
                "GPU busy at most {share} of the {whole} — host-side bound, no GPU samples{}",
                if self.scaled {
                    ", scaled for calls not kept as raw rows"
                } else {
                    ""
                }
            ),
            source => {
                let what = match source {
                    BusySource::NvmlProcess => format!("per-process samples of pid {}", self.pid),
                    _ if self.others_on_gpu.is_empty() => {
                        format!("device samples of GPU {}", self.gpu.unwrap_or(0))
                    }
                    _ => format!(
                        "device samples of GPU {}, which also count pids {}",
                        self.gpu.unwrap_or(0),
                        join(&self.others_on_gpu)
                    ),
                };
                let cover = if self.sampled_ns + self.whole_ns / 1000 < self.whole_ns {
                    format!(
                        "; samples cover {} of it, the rest is a host-side bound",
                        format::ns(self.sampled_ns)
                    )
                } else {
                    String::new()
                };
                format!("NVML: SM busy {share} of the {whole} ({what}{cover})")
            }
        }
    }
}

fn join(pids: &[i32]) -> String {
    pids.iter()
        .map(|p| p.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Merged intervals of `iv`, clipped to `span`.
fn union(mut iv: Vec<(i64, i64)>, span: (i64, i64)) -> Vec<(i64, i64)> {
    iv.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (a, b) in iv {
        let (a, b) = (a.max(span.0), b.min(span.1));
        if b <= a {
            continue;
        }
        match out.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Time of merged intervals `iv` inside `(a, b)`.
fn inside(iv: &[(i64, i64)], (a, b): (i64, i64)) -> i64 {
    iv.iter().map(|&(x, y)| (y.min(b) - x.max(a)).max(0)).sum()
}

/// How busy the GPU was for `pid` over `span`: NVML samples where they
/// cover it, the host-side bound (its CUDA activity spans) elsewhere.
pub fn busy_over(ctx: &Context, pid: i32, span: (i64, i64)) -> BusyFigure {
    let ds = ctx.ds;
    let span = (span.0, span.1.max(span.0 + 1));
    let bound = union(
        ds.activity
            .iter()
            .filter(|s| s.pid == pid)
            .map(|s| (s.start_ns, s.end_ns))
            .collect(),
        span,
    );
    let totals = ds.totals(AggSource::Cuda, None, Some(pid));
    let sampled_away =
        ds.activity_origin == ActivityOrigin::FromRawRows && totals.count > totals.stored;
    let whole_ns = span.1 - span.0;
    let host = |iv: (i64, i64)| -> i64 {
        let b = inside(&bound, iv);
        if sampled_away && totals.stored > 0 {
            // Spans folded from a sample of the calls miss the rest of them.
            let k = totals.count as f64 / totals.stored as f64;
            ((b as f64 * k).round() as i64).min(iv.1 - iv.0)
        } else {
            b
        }
    };
    match ds.gpu.measured_busy(pid, span) {
        Some(m) => {
            let covered = union(
                m.periods.iter().map(|p| (p.start_ns, p.end_ns)).collect(),
                span,
            );
            let sampled_ns: i64 = covered.iter().map(|(a, b)| b - a).sum();
            let mut busy = m.busy_ns;
            let mut cursor = span.0;
            for &(a, b) in covered.iter().chain(std::iter::once(&(span.1, span.1))) {
                if a > cursor {
                    busy += host((cursor, a));
                }
                cursor = cursor.max(b);
            }
            BusyFigure {
                source: m.source,
                gpu: Some(m.gpu),
                pid,
                busy_ns: busy.min(whole_ns),
                whole_ns,
                sampled_ns,
                others_on_gpu: m.others_on_gpu,
                scaled: false,
            }
        }
        None => BusyFigure {
            source: BusySource::HostBound,
            gpu: None,
            pid,
            busy_ns: host(span),
            whole_ns,
            sampled_ns: 0,
            others_on_gpu: Vec::new(),
            scaled: sampled_away,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(source: BusySource, busy: i64, whole: i64, sampled: i64) -> BusyFigure {
        BusyFigure {
            source,
            gpu: Some(0),
            pid: 7,
            busy_ns: busy,
            whole_ns: whole,
            sampled_ns: sampled,
            others_on_gpu: Vec::new(),
            scaled: false,
        }
    }

    #[test]
    fn measured_and_bound_figures_say_which_they_are() {
        let m = fig(
            BusySource::NvmlProcess,
            2_074_000_000,
            6_100_000_000,
            6_100_000_000,
        );
        assert_eq!(
            m.text(),
            "NVML: SM busy 34.0% of the 6.10 s (per-process samples of pid 7)"
        );
        let b = fig(BusySource::HostBound, 4_880_000_000, 6_100_000_000, 0);
        assert_eq!(
            b.text(),
            "GPU busy at most 80.0% of the 6.10 s — host-side bound, no GPU samples"
        );
        let part = fig(
            BusySource::NvmlDevice,
            1_000_000_000,
            4_000_000_000,
            2_000_000_000,
        );
        assert!(
            part.text().contains("samples cover 2.00 s of it"),
            "{}",
            part.text()
        );
    }

    #[test]
    fn union_merges_and_clips() {
        let u = union(vec![(5, 9), (0, 3), (2, 6), (20, 30)], (1, 25));
        assert_eq!(u, vec![(1, 9), (20, 25)]);
        assert_eq!(inside(&u, (8, 22)), 3);
    }
}
