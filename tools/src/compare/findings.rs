//! Findings of the two runs matched by what they blame: by cause, and for
//! findings named by code, by the part of the idle split they explain. Each
//! pair says whether the finding is in both runs, gone or new, and how the
//! idle time it explains moved, normalised per second of loop and per step.

use super::noise::{judge, Significance};
use super::pair::{Pair, Presence};
use super::run::RunInfo;
use crate::chains::{CausalChain, Cause};
use crate::explain::Report;
use serde::Serialize;

/// One finding in either run.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct FindingChange {
    /// Stable key: the cause, with `:part` for findings named by code.
    pub key: String,
    /// Mechanism blamed.
    pub cause: Cause,
    /// For a finding named by code: the idle-split part it explains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// The code the finding's idle time was spent in (largest first, from
    /// whichever run has it; empty without stack samples).
    pub code: Vec<String>,
    /// In both runs, gone or new.
    pub presence: Presence,
    /// Idle time explained, ns, in each run (0 where absent).
    pub explained_ns: Pair,
    /// Idle time explained per second of loop (0-1), in each run.
    pub per_loop_s: Pair,
    /// Idle time explained per step, ns, in each run.
    pub per_step_ns: Pair,
    /// Share of the run's loop idle time it explains, 0-1.
    pub explained_share: Pair,
    /// How the change in `per_loop_s` compares with the runs' spread.
    pub significance: Significance,
    /// Rank in each run (1 = top), `None` where absent.
    pub rank: (Option<usize>, Option<usize>),
    /// The fix the finding proposes (the baseline's where both have one).
    pub fix: String,
}

impl FindingChange {
    /// A readable name: the cause, and the part for findings named by code.
    pub fn label(&self) -> String {
        match &self.part {
            Some(part) => format!("{} ({part})", self.cause.name()),
            None => self.cause.name().to_string(),
        }
    }
}

/// The key a finding is matched by across runs.
pub fn key_of(c: &CausalChain) -> String {
    match (&c.part, c.cause) {
        (Some(part), Cause::IdleCode) => format!("{}:{part}", c.cause.name()),
        _ => c.cause.name().to_string(),
    }
}

/// Every finding of either run, matched, largest explained time first.
pub fn compare(
    base: &Report,
    new: &Report,
    runs: (&RunInfo, &RunInfo),
    band: Option<f64>,
) -> Vec<FindingChange> {
    let (rb, rn) = runs;
    let find = |r: &Report, key: &str| -> Option<(usize, CausalChain)> {
        r.chains
            .chains
            .iter()
            .enumerate()
            .find(|(_, c)| key_of(c) == key)
            .map(|(i, c)| (i + 1, c.clone()))
    };
    let mut keys: Vec<String> = Vec::new();
    for c in base.chains.chains.iter().chain(&new.chains.chains) {
        let k = key_of(c);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out: Vec<FindingChange> = keys
        .into_iter()
        .filter_map(|key| {
            let b = find(base, &key);
            let n = find(new, &key);
            let presence = Presence::of(b.is_some(), n.is_some())?;
            let any = b.as_ref().or(n.as_ref()).map(|(_, c)| c.clone())?;
            let ns =
                |x: &Option<(usize, CausalChain)>| x.as_ref().map_or(0, |(_, c)| c.explained_ns);
            let (nb, nn) = (ns(&b), ns(&n));
            let share = |x: &Option<(usize, CausalChain)>| {
                x.as_ref().map_or(0.0, |(_, c)| c.explained_share)
            };
            let per_loop_s = Pair::of(rb.per_loop_s(nb), rn.per_loop_s(nn));
            let code = b
                .as_ref()
                .filter(|(_, c)| !c.code.is_empty())
                .or(n.as_ref())
                .map(|(_, c)| c.code.iter().take(3).map(|s| s.text.clone()).collect())
                .unwrap_or_default();
            Some(FindingChange {
                key,
                cause: any.cause,
                part: any.part.clone(),
                code,
                presence,
                explained_ns: Pair::known(nb as f64, nn as f64),
                per_loop_s,
                per_step_ns: Pair::of(rb.per_step(nb), rn.per_step(nn)),
                explained_share: Pair::known(share(&b), share(&n)),
                significance: judge(per_loop_s.change.unwrap_or(0.0), band),
                rank: (b.as_ref().map(|x| x.0), n.as_ref().map(|x| x.0)),
                fix: b
                    .as_ref()
                    .or(n.as_ref())
                    .map(|(_, c)| c.fix.clone())
                    .unwrap_or_default(),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        let most = |f: &FindingChange| {
            f.explained_ns
                .base
                .unwrap_or(0.0)
                .max(f.explained_ns.new.unwrap_or(0.0))
        };
        most(b).total_cmp(&most(a))
    });
    out
}
