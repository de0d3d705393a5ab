//! What one thread was doing over chosen stretches of time, in the same
//! states the idle split uses (inside CUDA by part, off-CPU by reason,
//! on-CPU outside CUDA): for analyses that ask about moments other than GPU
//! idleness, such as a rank arriving late at a collective.

use super::host_wait::HostWaitCauses;
use super::process::ProcessSpans;
use super::split::{causes, thread_facts};
use crate::dataset::Dataset;
use crate::processes::main_processes;

/// The states of thread `tid` of process `pid` over `windows` (disjoint,
/// `[start, end)`, epoch ns), adding up to their total length; `None` when
/// the process made no CUDA call in the data.
pub fn thread_time_in(
    ds: &Dataset,
    pid: i32,
    tid: i32,
    windows: &[(i64, i64)],
) -> Option<HostWaitCauses> {
    let p = ProcessSpans::gather(ds, pid)?;
    let (mains, _) = main_processes(ds);
    let facts = thread_facts(ds, &p, tid, &mains);
    let pieces: Vec<(i64, i64, f64)> = windows
        .iter()
        .filter(|(a, b)| b > a)
        .map(|(a, b)| (*a, *b, (b - a) as f64))
        .collect();
    let total: i64 = windows.iter().map(|(a, b)| (b - a).max(0)).sum();
    Some(causes(&facts.segments(), &pieces, total))
}
