//! The idle split by cause: what the GPU-driving thread was doing while the
//! GPU idled, from its state segments ([`super::timeline`]) and the idle
//! pieces of the busy figure ([`super::measure`]).

use super::host_wait::{HostWaitCauses, STORM_RATE};
use super::process::ProcessSpans;
use super::timeline::ThreadFacts;
use crate::activity::ActivityOrigin;
use crate::dataset::Dataset;
use crate::idle_split::states::{attribute, Segment, STATES};
use crate::processes::{role_of, Role};
use ingero_store::{AggSource, HostKind};
use std::collections::BTreeSet;

/// What the GPU thread's state segments are built from: its bursts and
/// context switches, the process's DataLoader workers and storm buckets.
pub fn thread_facts<'a>(
    ds: &'a Dataset,
    p: &ProcessSpans<'a>,
    gpu_thread: i32,
    mains: &[i32],
) -> ThreadFacts<'a> {
    ThreadFacts {
        span: p.span,
        first_call: p.first_call,
        last_call_end: p.last_call_end,
        bursts: p
            .bursts
            .iter()
            .copied()
            .filter(|s| s.tid == gpu_thread)
            .collect(),
        switches: ds
            .gpu_thread_switches
            .iter()
            .filter(|h| h.pid == p.pid && h.tid == gpu_thread)
            .collect(),
        workers: worker_lifetimes(ds, p.pid, mains),
        storm_buckets: storm_buckets(ds, p.pid),
        bucket_ns: ds.bucket_ns,
    }
}

/// Lifetimes of the DataLoader workers descended from `pid`: blocked time
/// while one is alive counts as waiting on them.
fn worker_lifetimes(ds: &Dataset, pid: i32, mains: &[i32]) -> Vec<(i64, i64)> {
    ds.processes
        .values()
        .filter(|p| {
            matches!(role_of(ds, p.pid, mains, &[pid]).0, Role::DataloaderWorker)
                && ds.descends_from(p.pid, pid)
        })
        .map(|p| (p.first_seen_ns, p.last_seen_ns))
        .collect()
}

/// Starts of the aggregate buckets where `pid` allocated pages at a storm
/// rate, sorted: on-CPU host time there is blamed on the storm.
fn storm_buckets(ds: &Dataset, pid: i32) -> Vec<i64> {
    let width_s = ds.bucket_ns as f64 / 1e9;
    ds.aggs
        .iter()
        .filter(|a| {
            a.source == AggSource::Host
                && a.code == HostKind::PageAlloc.id() as i64
                && a.pid == pid
                && a.sum_bytes as f64 / width_s >= STORM_RATE
        })
        .map(|a| a.bucket_ns)
        .collect::<BTreeSet<i64>>()
        .into_iter()
        .collect()
}

/// Shares the idle pieces among the thread's states, so that the parts add
/// up to `host_wait` exactly.
pub fn causes(segments: &[Segment], pieces: &[(i64, i64, f64)], host_wait: i64) -> HostWaitCauses {
    causes_of(&attribute(segments, pieces), host_wait)
}

/// [`causes`] from idle ns per state slot already shared out.
pub fn causes_of(shares: &[f64; STATES], host_wait: i64) -> HostWaitCauses {
    let mut causes = HostWaitCauses::from_shares(shares);
    // Calls counted but not placed ran while the thread was on the CPU:
    // their time leaves the on-CPU parts first.
    let mut surplus = causes.sum() - host_wait;
    for part in [
        &mut causes.host_compute_ns,
        &mut causes.page_alloc_storm_ns,
        &mut causes.after_last_call_ns,
    ] {
        let take = surplus.clamp(0, *part);
        *part -= take;
        surplus -= take;
    }
    // What is left is rounding (or a deficit): the largest part absorbs it.
    *causes.largest_mut() -= surplus;
    causes
}

/// Caveats on the off-CPU parts: switches not marked as preemptions or not
/// all kept as raw rows.
pub fn switch_notes(ds: &Dataset, pid: i32, facts: &ThreadFacts, basis: &mut Vec<String>) {
    if facts.switches.iter().all(|h| h.arg < 0) && !facts.switches.is_empty() {
        basis.push("the recorder did not mark which context switches were preemptions".to_string());
    }
    let pid_sw = ds.host_totals(HostKind::SchedSwitch, Some(pid));
    if pid_sw.count > pid_sw.stored && ds.activity_origin == ActivityOrigin::FromRawRows {
        basis.push(
            "some context switches of this process were not kept as raw rows: off-CPU parts are lower bounds"
                .to_string(),
        );
    }
}
