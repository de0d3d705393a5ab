//! The code paths whose idle time moved most between the runs: where the
//! GPU thread spent the idle time (from stack samples), matched by part of
//! the idle split and code text, normalised per second of loop.

use super::pair::{Pair, Presence};
use super::run::{main_idle, RunInfo};
use crate::explain::Report;
use serde::Serialize;

/// Code paths listed at most.
pub const CODE_LISTED: usize = 10;

/// One code path in either run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct CodeChange {
    /// Idle-split part the time falls in (`host_compute`, ...).
    pub part: String,
    /// The code, as the idle split names it.
    pub code: String,
    /// In both runs, gone or new.
    pub presence: Presence,
    /// Idle time in that code, ns.
    pub idle_ns: Pair,
    /// Idle time in that code per second of loop (0-1).
    pub per_loop_s: Pair,
}

/// `(part, code) -> idle ns` of a run's main GPU process.
fn paths(r: &Report) -> Vec<((String, String), i64)> {
    main_idle(r)
        .map(|p| {
            p.code
                .iter()
                .flat_map(|part| {
                    part.code
                        .iter()
                        .map(|c| ((part.key.clone(), c.text.clone()), c.idle_ns))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The code paths whose idle time per second of loop moved most.
pub fn compare(base: &Report, new: &Report, runs: (&RunInfo, &RunInfo)) -> Vec<CodeChange> {
    let (pb, pn) = (paths(base), paths(new));
    let mut keys: Vec<&(String, String)> = Vec::new();
    for (k, _) in pb.iter().chain(&pn) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let get = |v: &[((String, String), i64)], k: &(String, String)| {
        v.iter().find(|(x, _)| x == k).map(|(_, ns)| *ns)
    };
    let mut out: Vec<CodeChange> = keys
        .into_iter()
        .filter_map(|k| {
            let (b, n) = (get(&pb, k), get(&pn, k));
            let presence = Presence::of(b.is_some(), n.is_some())?;
            let (b, n) = (b.unwrap_or(0), n.unwrap_or(0));
            let per_loop_s = Pair::of(runs.0.per_loop_s(b), runs.1.per_loop_s(n));
            (per_loop_s.change != Some(0.0)).then(|| CodeChange {
                part: k.0.clone(),
                code: k.1.clone(),
                presence,
                idle_ns: Pair::known(b as f64, n as f64),
                per_loop_s,
            })
        })
        .collect();
    out.sort_by(|a, b| {
        let moved = |c: &CodeChange| c.per_loop_s.change.map_or(0.0, f64::abs);
        moved(b).total_cmp(&moved(a))
    });
    out.truncate(CODE_LISTED);
    out
}
