//! "Did the fix work?": two captures compared through their findings.
//!
//! [`compare`] lines up two [`Report`]s: each finding present in both, gone
//! or new with the idle time it explains ([`findings`]), the GPU idle share
//! and its split ([`idle`]), per-op figures ([`ops`]), rates ([`rates`]),
//! processes matched by role and command line ([`processes`]) and the code
//! paths that moved ([`code`]). Figures are normalised per second and per
//! step, and a change is judged against the spread each run shows on its
//! own ([`noise`]) before the [`verdict`] calls it an improvement.

pub mod code;
pub mod findings;
pub mod idle;
pub mod noise;
pub mod ops;
pub mod pair;
pub mod processes;
pub mod rates;
pub mod run;
pub mod text;
pub mod verdict;
pub mod window;

use crate::error::Result;
use crate::explain::{explain, Report};
use ingero_store::TraceDb;
use processes::Commands;
use run::RunInfo;
use serde::Serialize;

pub use pair::{Pair, Presence};
pub use verdict::{Confidence, Outcome, Verdict};
pub use window::WindowChoice;

/// Answer of `ingero compare` and of the `compare_runs` tool.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Comparison {
    /// The answer in one sentence, with its outcome and confidence.
    pub verdict: Verdict,
    /// Which part of each run was read.
    pub window: WindowChoice,
    /// The baseline run.
    pub base: RunInfo,
    /// The new run.
    pub new: RunInfo,
    /// GPU idle share and its split, side by side.
    pub idle: idle::IdleComparison,
    /// Findings matched by cause (and part for findings named by code).
    pub findings: Vec<findings::FindingChange>,
    /// Per CUDA op, side by side, normalised per second.
    pub ops: Vec<ops::OpChange>,
    /// Launch, copy, page-allocation, context-switch and NVML rates.
    pub rates: Vec<rates::RateChange>,
    /// Processes matched by role and command line.
    pub processes: Vec<processes::GroupChange>,
    /// Code paths whose idle time moved most (empty without stacks).
    pub code: Vec<code::CodeChange>,
    /// Caveats.
    pub notes: Vec<String>,
}

/// Compares two reports; `commands` are each run's command lines by pid
/// (see [`processes::commands_of`]), `window` the part each report covers.
pub fn compare(
    base: &Report,
    new: &Report,
    commands: (&Commands, &Commands),
    window: WindowChoice,
) -> Comparison {
    let main_command = |r: &Report, c: &Commands| {
        r.processes
            .processes
            .iter()
            .find(|p| Some(p.pid) == run::main_idle(r).map(|m| m.pid))
            .map(|p| processes::command_of(p, c))
            .unwrap_or_default()
    };
    let rb = RunInfo::of(base, main_command(base, commands.0));
    let rn = RunInfo::of(new, main_command(new, commands.1));
    let band = noise::band(&rb.spread, &rn.spread);
    let runs = (&rb, &rn);
    let idle = idle::compare(base, new, band);
    let findings = findings::compare(base, new, runs, band);
    let same = base == new;
    let verdict = verdict::verdict(&idle, &findings, same);
    let mut notes = Vec::new();
    if idle.lower_bound {
        notes.push(
            "A run has no GPU samples: its busy time is a host-side upper bound and its idle \
             share a lower bound."
                .to_string(),
        );
    }
    if rb.steps.is_none() || rn.steps.is_none() {
        notes.push("A run has no step period: per-step figures are missing for it.".to_string());
    }
    if !rb.main_command.is_empty()
        && !rn.main_command.is_empty()
        && rb.main_command != rn.main_command
    {
        notes.push(format!(
            "The main GPU processes ran different commands: `{}` and `{}`.",
            rb.main_command, rn.main_command
        ));
    }
    Comparison {
        verdict,
        window,
        idle,
        findings,
        ops: ops::compare(base, new, runs),
        rates: rates::compare(base, new, runs),
        processes: processes::compare(base, new, commands, runs),
        code: code::compare(base, new, runs),
        base: rb,
        new: rn,
        notes,
    }
}

/// Explains both databases over `window` and compares them.
pub fn compare_dbs(base: &TraceDb, new: &TraceDb, window: WindowChoice) -> Result<Comparison> {
    let rb = explain(base, &window::scope_for(base, window)?)?;
    let rn = explain(new, &window::scope_for(new, window)?)?;
    let (cb, cn) = (processes::commands_of(base), processes::commands_of(new));
    Ok(compare(&rb, &rn, (&cb, &cn), window))
}
