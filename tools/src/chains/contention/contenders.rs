//! Who competes with the main GPU process for the CPU: the job's own helper
//! processes (DataLoader workers, pin-memory threads, other children) and
//! processes outside the job, and which of the two groups takes the blame.

use super::super::context::Context;
use crate::finding::Cause;
use crate::processes::Role;
use ingero_store::HostKind;

/// A process that switched on the CPU: pid, context switches, page allocations.
pub type Contender = (i32, i64, i64);

/// The processes that switched on the CPU during the window, by group.
pub struct Contenders {
    /// The job's own helpers, most switches first.
    pub helpers: Vec<Contender>,
    /// Processes outside the job, most switches first.
    pub external: Vec<Contender>,
}

impl Contenders {
    /// Every non-CUDA process with at least one context switch, sorted into
    /// the job's helpers of `main` and outside processes.
    pub fn find(ctx: &Context, main: i32) -> Contenders {
        let ds = ctx.ds;
        let mut helpers: Vec<Contender> = Vec::new();
        let mut external: Vec<Contender> = Vec::new();
        for pid in ds.all_pids() {
            if ctx.cuda_pids.contains(&pid) {
                continue;
            }
            let sw = ds.host_totals(HostKind::SchedSwitch, Some(pid)).count;
            let pages = ds.host_totals(HostKind::PageAlloc, Some(pid)).count;
            if sw == 0 {
                continue;
            }
            let role = ctx.role(pid);
            if role.is_job_helper() && (ds.descends_from(pid, main) || ctx.mains.len() == 1) {
                helpers.push((pid, sw, pages));
            } else if role == Role::External {
                external.push((pid, sw, pages));
            }
        }
        helpers.sort_by_key(|h| std::cmp::Reverse(h.1));
        external.sort_by_key(|h| std::cmp::Reverse(h.1));
        Contenders { helpers, external }
    }

    /// Context switches of the job's helpers.
    pub fn helper_switches(&self) -> i64 {
        self.helpers.iter().map(|h| h.1).sum()
    }

    /// Context switches of the outside processes.
    pub fn external_switches(&self) -> i64 {
        self.external.iter().map(|h| h.1).sum()
    }
}

/// The group blamed for the contention and how it is named.
pub struct Blame<'c> {
    /// The finding's cause.
    pub cause: Cause,
    /// True when those children include DataLoader workers (or pin-memory threads).
    pub workers: bool,
    /// The blamed processes.
    pub group: &'c [Contender],
    /// Their context switches.
    pub switches: i64,
    /// Their page allocations.
    pub pages: i64,
    /// Who they are, in words.
    pub who: String,
}

impl<'c> Blame<'c> {
    /// The job's own children win the blame when they switch more; they are
    /// DataLoader contention only when some of them are DataLoader workers.
    pub fn of(ctx: &Context, main: i32, found: &'c Contenders) -> Blame<'c> {
        let own_children = found.helper_switches() >= found.external_switches();
        let has_workers = found
            .helpers
            .iter()
            .any(|h| matches!(ctx.role(h.0), Role::DataloaderWorker | Role::PinMemory));
        let workers = own_children && has_workers;
        let (cause, group) = if own_children {
            let cause = if workers {
                Cause::DataloaderWorkerContention
            } else {
                Cause::CpuContention
            };
            (cause, found.helpers.as_slice())
        } else {
            (Cause::CpuContention, found.external.as_slice())
        };
        Blame {
            cause,
            workers,
            group,
            switches: group.iter().map(|h| h.1).sum(),
            pages: group.iter().map(|h| h.2).sum(),
            who: who(ctx, main, group, own_children, workers),
        }
    }

    /// Pids of the blamed processes, most switches first.
    pub fn culprits(&self) -> Vec<i32> {
        self.group.iter().map(|h| h.0).collect()
    }
}

/// The blamed group in words: the workers of `main`, its other children, or
/// the first three outside processes by name.
fn who(ctx: &Context, main: i32, group: &[Contender], own_children: bool, workers: bool) -> String {
    if workers {
        let n_workers = group
            .iter()
            .filter(|h| ctx.role(h.0) == Role::DataloaderWorker)
            .count();
        format!("{n_workers} DataLoader worker(s) of {main}")
    } else if own_children {
        format!(
            "{} child process(es) of {main} (not DataLoader workers)",
            group.len()
        )
    } else {
        let names: Vec<String> = group
            .iter()
            .take(3)
            .map(|h| format!("{} ({})", ctx.ds.comm(h.0), h.0))
            .collect();
        format!("processes outside the job: {}", names.join(", "))
    }
}
