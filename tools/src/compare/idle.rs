//! The GPU idle share and each part of the idle split side by side: where
//! the idle time went in each run, as a share of the process's window so
//! runs of different lengths read alike.

use super::noise::{judge, Significance};
use super::pair::{ratio, Pair};
use super::run::main_idle;
use crate::explain::Report;
use crate::idle::ProcessIdle;
use serde::Serialize;

/// The main GPU process's idle time in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct IdleComparison {
    /// GPU idle share inside the loop (first to last CUDA call), 0-1.
    pub loop_idle_share: Pair,
    /// GPU idle share of the process's whole window, 0-1.
    pub idle_share: Pair,
    /// GPU idle inside the loop per step, ns.
    pub loop_idle_per_step_ns: Pair,
    /// The width (idle-share units, 0-1) inside which a change in the idle
    /// share is within the runs' own spread; `None` when the files do not say.
    pub noise_band: Option<f64>,
    /// How the change in `loop_idle_share` compares with that band.
    pub significance: Significance,
    /// True when busy is an upper bound (no GPU samples) in either run:
    /// the idle shares are then lower bounds.
    pub lower_bound: bool,
    /// Each part of the idle split, in report order.
    pub parts: Vec<PartChange>,
}

/// One part of the idle split in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct PartChange {
    /// The part, as the idle split labels it.
    pub part: String,
    /// Its time, ns.
    pub ns: Pair,
    /// Its time as a share of the process's window, 0-1.
    pub share: Pair,
}

/// The idle comparison of the main GPU processes of `base` and `new`.
pub fn compare(base: &Report, new: &Report, band: Option<f64>) -> IdleComparison {
    let (b, n) = (main_idle(base), main_idle(new));
    let loop_share = |p: Option<&ProcessIdle>| {
        p.and_then(|p| ratio(p.loop_idle_ns() as f64, p.active_span_ns as f64))
    };
    let per_step = |p: Option<&ProcessIdle>| {
        p.and_then(|p| {
            let steps = p.per_step.as_ref()?.steps;
            ratio(p.loop_idle_ns() as f64, steps)
        })
    };
    let loop_idle_share = Pair::of(loop_share(b), loop_share(n));
    let labelled = |p: Option<&ProcessIdle>| p.map(|p| (p.causes.labelled(), p.span_ns));
    let (lb, ln) = (labelled(b), labelled(n));
    let count = lb.as_ref().or(ln.as_ref()).map_or(0, |l| l.0.len());
    let parts = (0..count)
        .filter_map(|i| {
            let at = |l: &Option<(
                [(&'static str, i64); crate::idle_split::states::STATES],
                i64,
            )>| { l.as_ref().map(|(parts, span)| (parts[i], *span)) };
            let (pb, pn) = (at(&lb), at(&ln));
            let label = pb.or(pn)?.0 .0;
            let ns = |x: Option<((&str, i64), i64)>| x.map(|((_, v), _)| v as f64);
            let share = |x: Option<((&str, i64), i64)>| {
                x.and_then(|((_, v), span)| ratio(v as f64, span as f64))
            };
            let pair = Pair::of(ns(pb), ns(pn));
            // Parts empty in both runs say nothing.
            (pair.base.unwrap_or(0.0) != 0.0 || pair.new.unwrap_or(0.0) != 0.0).then(|| {
                PartChange {
                    part: label.to_string(),
                    ns: pair,
                    share: Pair::of(share(pb), share(pn)),
                }
            })
        })
        .collect();
    IdleComparison {
        loop_idle_share,
        idle_share: Pair::of(b.map(|p| p.idle_share), n.map(|p| p.idle_share)),
        loop_idle_per_step_ns: Pair::of(per_step(b), per_step(n)),
        noise_band: band,
        significance: judge(loop_idle_share.change.unwrap_or(0.0), band),
        lower_bound: b.is_some_and(|p| p.busy_is_upper_bound)
            || n.is_some_and(|p| p.busy_is_upper_bound),
        parts,
    }
}
