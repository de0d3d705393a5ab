//! Stragglers: per collective, the rank that arrived last and by how much,
//! what that rank was doing while the others waited, and the wait it put on
//! them. Arrival is the entry of the collective call on each rank's (merged,
//! offset-corrected) clock; a rank waits for the last one from its own
//! arrival to the last arrival, whether inside the call (a blocking
//! collective) or in the next synchronize (NCCL's usual asynchronous one).

use super::late_stacks::{late_stacks, LateStacks};
use super::members::{paired, Collective, Member};
use crate::dataset::Dataset;
use crate::error::Result;
use crate::idle::thread_time_in;
use ingero_store::TraceDb;
use serde::Serialize;
use std::collections::BTreeMap;

/// A rank is a straggler when it arrives last at least this share of its
/// communicator's matched collectives...
pub const LAST_SHARE: f64 = 0.5;
/// ...by a median of at least this much after the next latest rank, ns.
pub const MIN_LATENESS_NS: i64 = 1_000_000;
/// Fewest matched collectives the rule judges.
pub const MIN_COLLECTIVES: usize = 3;
/// Fewest stack samples in the late windows for their hottest frame to be
/// named.
pub const MIN_STACK_SAMPLES: i64 = 5;

/// One part of what the late rank's thread did while the others waited.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LatePart {
    /// State (the idle split's words).
    pub state: String,
    /// Time in that state within the late windows, ns.
    pub ns: i64,
    /// Share of the late windows' total.
    pub share: f64,
}

/// The wait one other rank had for the straggler.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct WaitOn {
    /// Who waited.
    pub who: String,
    /// Process id.
    pub pid: i32,
    /// Sum over the straggler's late collectives of (straggler's arrival
    /// minus this rank's arrival), ns.
    pub wait_ns: i64,
    /// Its time inside those collective calls, ns (a blocking collective
    /// holds the wait there; an asynchronous one returns at once and the
    /// wait falls in a later synchronize).
    pub inside_calls_ns: i64,
}

/// A rank that made the others wait.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Straggler {
    /// Who (rank, node, pid).
    pub who: String,
    /// Global rank, -1 unknown.
    pub rank: i32,
    /// Node.
    pub node: String,
    /// Process id.
    pub pid: i32,
    /// Communicator key (decimal text: 64-bit).
    pub comm_key: String,
    /// Ranks of the communicator seen in the file.
    pub ranks_seen: usize,
    /// Collectives matched across every rank seen.
    pub matched: usize,
    /// Of those, the ones it arrived last at.
    pub last: usize,
    /// Median of (its arrival minus the next latest arrival) over those, ns.
    pub median_late_ns: i64,
    /// Sum of the same, ns: the late windows.
    pub late_ns: i64,
    /// The wait it put on each other rank.
    pub waits: Vec<WaitOn>,
    /// Sum of `waits`, ns.
    pub wait_imposed_ns: i64,
    /// What its collective-calling thread did during the late windows,
    /// largest first.
    pub during_late: Vec<LatePart>,
    /// Its thread's stack samples inside the late windows, where kept.
    pub late_stacks: Option<LateStacks>,
    /// The finding in words, naming a cause only where the states show one.
    pub summary: String,
}

/// Per-rank arrival figures on one communicator.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct RankArrivals {
    /// Who.
    pub who: String,
    /// Process id.
    pub pid: i32,
    /// Global rank, -1 unknown.
    pub rank: i32,
    /// Node.
    pub node: String,
    /// Communicator key.
    pub comm_key: String,
    /// Collectives it made on the communicator.
    pub collectives: usize,
    /// Time inside them, ns.
    pub inside_ns: i64,
    /// Matched collectives it arrived last at.
    pub last: usize,
    /// Median of (last arrival minus its arrival) over the matched
    /// collectives, ns: how long it typically waited for the slowest.
    pub median_wait_ns: i64,
    /// Sum of the same, ns.
    pub wait_ns: i64,
}

/// Arrival figures and stragglers of every communicator seen by more than
/// one rank in the file.
pub fn judge(
    db: &TraceDb,
    ds: &Dataset,
    members: &[Member],
) -> Result<(Vec<RankArrivals>, Vec<Straggler>)> {
    let mut by_key: BTreeMap<i64, Vec<&Member>> = BTreeMap::new();
    for m in members {
        by_key.entry(m.key).or_default().push(m);
    }
    let mut table = Vec::new();
    let mut found = Vec::new();
    for (key, group) in by_key {
        if group.len() < 2 {
            continue;
        }
        let rounds = rounds(&group);
        for (i, m) in group.iter().enumerate() {
            let waits: Vec<i64> = rounds
                .iter()
                .map(|r| r.last_arrival() - r.calls[i].arrive_ns)
                .collect();
            table.push(RankArrivals {
                who: m.label(),
                pid: m.pid,
                rank: m.rank,
                node: m.node.clone(),
                comm_key: key.to_string(),
                collectives: m.calls.len(),
                inside_ns: m.calls.iter().map(|c| c.dur_ns).sum(),
                last: rounds.iter().filter(|r| r.last_index() == i).count(),
                median_wait_ns: median(waits.clone()),
                wait_ns: waits.iter().sum(),
            });
        }
        if rounds.len() < MIN_COLLECTIVES {
            continue;
        }
        for (i, m) in group.iter().enumerate() {
            let late: Vec<&Round> = rounds.iter().filter(|r| r.last_index() == i).collect();
            if (late.len() as f64) < LAST_SHARE * rounds.len() as f64 {
                continue;
            }
            let lateness: Vec<i64> = late.iter().map(|r| r.lateness()).collect();
            let median_late = median(lateness.clone());
            if median_late < MIN_LATENESS_NS {
                continue;
            }
            found.push(straggler(
                db,
                ds,
                key,
                &group,
                i,
                m,
                &rounds,
                &late,
                median_late,
            )?);
        }
    }
    Ok((table, found))
}

/// One collective as every rank of the group made it.
struct Round<'a> {
    calls: Vec<&'a Collective>,
}

impl Round<'_> {
    fn last_index(&self) -> usize {
        (0..self.calls.len())
            .max_by_key(|i| self.calls[*i].arrive_ns)
            .unwrap_or(0)
    }

    fn last_arrival(&self) -> i64 {
        self.calls[self.last_index()].arrive_ns
    }

    /// The last arrival minus the next latest.
    fn lateness(&self) -> i64 {
        let mut t: Vec<i64> = self.calls.iter().map(|c| c.arrive_ns).collect();
        t.sort_unstable();
        t[t.len() - 1] - t[t.len().saturating_sub(2)]
    }
}

/// The collectives every member made, matched by order (same function and
/// count), as rounds with the members' calls in member order.
fn rounds<'a>(group: &[&'a Member]) -> Vec<Round<'a>> {
    let first = group[0];
    let mut per: Vec<BTreeMap<i64, &'a Collective>> = Vec::new();
    for other in &group[1..] {
        let (pairs, _) = paired(first, other);
        per.push(pairs.into_iter().map(|(a, b)| (a.seq, b)).collect());
    }
    first
        .calls
        .iter()
        .filter_map(|c| {
            let mut calls = vec![c];
            for p in &per {
                calls.push(*p.get(&c.seq)?);
            }
            Some(Round { calls })
        })
        .collect()
}

#[allow(clippy::too_many_arguments)]
fn straggler(
    db: &TraceDb,
    ds: &Dataset,
    key: i64,
    group: &[&Member],
    i: usize,
    m: &Member,
    rounds: &[Round],
    late: &[&Round],
    median_late: i64,
) -> Result<Straggler> {
    let windows: Vec<(i64, i64)> = late
        .iter()
        .map(|r| {
            let end = r.calls[i].arrive_ns;
            (end - r.lateness(), end)
        })
        .collect();
    let late_ns: i64 = windows.iter().map(|(a, b)| b - a).sum();
    let tid = dominant_tid(&m.calls);
    let mut during: Vec<LatePart> = thread_time_in(ds, m.pid, tid, &windows)
        .map(|c| {
            c.labelled()
                .into_iter()
                .filter(|(_, ns)| *ns > 0)
                .map(|(label, ns)| LatePart {
                    state: label.to_string(),
                    ns,
                    share: ns as f64 / late_ns.max(1) as f64,
                })
                .collect()
        })
        .unwrap_or_default();
    during.sort_by_key(|p| std::cmp::Reverse(p.ns));
    let waits: Vec<WaitOn> = group
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(j, o)| WaitOn {
            who: o.label(),
            pid: o.pid,
            wait_ns: late
                .iter()
                .map(|r| r.calls[i].arrive_ns - r.calls[j].arrive_ns)
                .sum(),
            inside_calls_ns: late.iter().map(|r| r.calls[j].dur_ns).sum(),
        })
        .collect();
    let wait_imposed_ns = waits.iter().map(|w| w.wait_ns).sum();
    let mut sorted = windows.clone();
    sorted.sort_unstable();
    let stacks = late_stacks(db, m.pid, tid, &sorted)?;
    let summary = summary_of(
        m,
        rounds.len(),
        late.len(),
        median_late,
        late_ns,
        &during,
        wait_imposed_ns,
        stacks.as_ref(),
    );
    Ok(Straggler {
        who: m.label(),
        rank: m.rank,
        node: m.node.clone(),
        pid: m.pid,
        comm_key: key.to_string(),
        ranks_seen: group.len(),
        matched: rounds.len(),
        last: late.len(),
        median_late_ns: median_late,
        late_ns,
        waits,
        wait_imposed_ns,
        during_late: during,
        late_stacks: stacks,
        summary,
    })
}

#[allow(clippy::too_many_arguments)]
fn summary_of(
    m: &Member,
    matched: usize,
    last: usize,
    median_late: i64,
    late_ns: i64,
    during: &[LatePart],
    imposed: i64,
    stacks: Option<&LateStacks>,
) -> String {
    let ms = |ns: i64| format!("{:.1} ms", ns as f64 / 1e6);
    let mut s = format!(
        "{} arrived last at {last} of {matched} matched collectives, a median {} after the next \
         latest rank; the other ranks waited {} for it in all.",
        m.label(),
        ms(median_late),
        ms(imposed)
    );
    match during.first() {
        Some(top) if top.share >= 0.5 => {
            let hot = stacks
                .filter(|st| st.samples >= MIN_STACK_SAMPLES)
                .and_then(|st| {
                    st.frames
                        .first()
                        .filter(|f| f.share >= 0.5)
                        .map(|f| (st, f))
                });
            let where_ =
                hot.map(|(st, f)| {
                    format!(
                    "its hottest frame there was {} ({} of {} {} stack samples in those windows): \
                     that is where the late time went",
                    f.frame,
                    f.samples,
                    st.samples,
                    if st.kind == "python" { "Python" } else { "on-CPU" }
                )
                });
            let why = match top.state.as_str() {
                "on-CPU outside CUDA" if where_.is_some() => where_.as_deref().unwrap_or_default(),
                "on-CPU outside CUDA" => {
                    "cause not identified: on-CPU stacks of this rank would tell what it computed"
                }
                "off-CPU: blocked (I/O, locks, sleep)" => {
                    "it was blocked, not computing: off-CPU stacks or I/O tracing would tell on what"
                }
                "off-CPU: preempted (run queue)" => {
                    "it was runnable but not running: the CPU was taken by other threads"
                }
                "off-CPU: waiting on DataLoader workers" => "it was waiting on its DataLoader workers",
                "on-CPU during page-allocation storms" => {
                    "its process was faulting in fresh pages at a storm rate"
                }
                _ => "see the CUDA calls of this rank in those windows",
            };
            s.push_str(&format!(
                " During those {} its thread was {} for {} ({:.0}%): {why}.",
                ms(late_ns),
                top.state,
                ms(top.ns),
                top.share * 100.0
            ));
        }
        Some(_) => s.push_str(&format!(
            " During those {} no single state of its thread holds half the time (see the parts).",
            ms(late_ns)
        )),
        None => s.push_str(" Its thread's states in those windows are not in the data."),
    }
    s
}

fn dominant_tid(calls: &[Collective]) -> i32 {
    let mut n: BTreeMap<i32, usize> = BTreeMap::new();
    for c in calls {
        *n.entry(c.tid).or_default() += 1;
    }
    n.into_iter().max_by_key(|(_, k)| *k).map_or(0, |(t, _)| t)
}

fn median(mut v: Vec<i64>) -> i64 {
    if v.is_empty() {
        return 0;
    }
    v.sort_unstable();
    v[v.len() / 2]
}
