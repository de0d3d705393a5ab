//! Processes of the two runs matched by what they are, not by pid (pids
//! differ between runs): the main GPU process with the main one, and the
//! others by role (workers, helpers, outside contenders) and command line,
//! in groups, since a job's workers share one command line.

use super::pair::{Pair, Presence};
use super::run::RunInfo;
use crate::explain::Report;
use crate::processes::{ProcessRow, Role};
use serde::Serialize;
use std::collections::BTreeMap;

/// Command lines by pid, read from a capture's process table.
pub type Commands = BTreeMap<i32, String>;

/// Processes of one role and command line, in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct GroupChange {
    /// Role in the job.
    pub role: Role,
    /// Command line in the baseline (or the new run where the group is new).
    pub command: String,
    /// Command line in the new run, when it differs from `command`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_command: Option<String>,
    /// In both runs, gone or new.
    pub presence: Presence,
    /// Processes in the group.
    pub processes: Pair,
    /// CUDA calls per second of window.
    pub cuda_calls_per_s: Pair,
    /// Context switches per second of window.
    pub context_switches_per_s: Pair,
    /// Page allocations per second of window.
    pub page_allocs_per_s: Pair,
}

/// A process's command line: the recorded one, else its command name.
pub fn command_of(p: &ProcessRow, commands: &Commands) -> String {
    commands
        .get(&p.pid)
        .filter(|c| !c.trim().is_empty())
        .map_or_else(|| p.comm.clone(), |c| c.trim().to_string())
}

/// Groups of one run: (role, command) with the sums of its processes.
fn groups(r: &Report, commands: &Commands) -> Vec<((Role, String), [f64; 4])> {
    let mut out: Vec<((Role, String), [f64; 4])> = Vec::new();
    for p in &r.processes.processes {
        let key = (p.role, command_of(p, commands));
        let add = [
            1.0,
            p.cuda_calls as f64,
            p.context_switches as f64,
            p.page_allocs as f64,
        ];
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, sums)) => sums.iter_mut().zip(add).for_each(|(s, a)| *s += a),
            None => out.push((key, add)),
        }
    }
    out
}

/// The process groups of both runs, matched.
pub fn compare(
    base: &Report,
    new: &Report,
    commands: (&Commands, &Commands),
    runs: (&RunInfo, &RunInfo),
) -> Vec<GroupChange> {
    let (gb, gn) = (groups(base, commands.0), groups(new, commands.1));
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    let mut taken = vec![false; gn.len()];
    // Exact role and command first.
    for (i, (k, _)) in gb.iter().enumerate() {
        let j = gn
            .iter()
            .enumerate()
            .position(|(j, (kn, _))| !taken[j] && kn == k);
        if let Some(j) = j {
            taken[j] = true;
        }
        pairs.push((Some(i), j));
    }
    // Then a role left alone on each side: the same part of the job with
    // another command line (the fix changed the arguments).
    for role in [
        Role::Main,
        Role::DataloaderWorker,
        Role::PinMemory,
        Role::GpuChild,
    ] {
        let left_b: Vec<usize> = pairs
            .iter()
            .enumerate()
            .filter(|(_, p)| p.1.is_none() && p.0.is_some_and(|i| gb[i].0 .0 == role))
            .map(|(at, _)| at)
            .collect();
        let left_n: Vec<usize> = (0..gn.len())
            .filter(|&j| !taken[j] && gn[j].0 .0 == role)
            .collect();
        if let ([at], [j]) = (left_b.as_slice(), left_n.as_slice()) {
            pairs[*at].1 = Some(*j);
            taken[*j] = true;
        }
    }
    pairs.extend(
        (0..gn.len())
            .filter(|&j| !taken[j])
            .map(|j| (None, Some(j))),
    );
    let (rb, rn) = runs;
    pairs
        .into_iter()
        .filter_map(|(i, j)| {
            let b = i.map(|i| &gb[i]);
            let n = j.map(|j| &gn[j]);
            let presence = Presence::of(b.is_some(), n.is_some())?;
            let ((role, command), _) = b.or(n)?;
            let new_command = match (b, n) {
                (Some((kb, _)), Some((kn, _))) if kb.1 != kn.1 => Some(kn.1.clone()),
                _ => None,
            };
            let sum =
                |g: Option<&((Role, String), [f64; 4])>, at: usize| g.map_or(0.0, |(_, s)| s[at]);
            let per_s =
                |at: usize| Pair::of(rb.per_window_s(sum(b, at)), rn.per_window_s(sum(n, at)));
            Some(GroupChange {
                role: *role,
                command: command.clone(),
                new_command,
                presence,
                processes: Pair::known(sum(b, 0), sum(n, 0)),
                cuda_calls_per_s: per_s(1),
                context_switches_per_s: per_s(2),
                page_allocs_per_s: per_s(3),
            })
        })
        .collect()
}

/// Command lines of `db`'s processes (empty when the file has none).
pub fn commands_of(db: &ingero_store::TraceDb) -> Commands {
    let read = || -> rusqlite::Result<Commands> {
        let mut stmt = db
            .conn()
            .prepare("SELECT pid, cmdline FROM processes WHERE cmdline != ''")?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, i32>(0)?, r.get::<_, String>(1)?)))?;
        rows.collect()
    };
    // Files without a command-line column fall back to command names.
    read().unwrap_or_default()
}
