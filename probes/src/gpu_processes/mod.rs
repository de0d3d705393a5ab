//! The processes using a GPU on this host, found without tracing anything:
//! processes with the CUDA driver library (`libcuda.so*`) in their memory
//! map, joined with NVML's compute processes where the NVIDIA driver is
//! present. An assistant lists them to pick what to capture, and a capture
//! request can name one of them ([`match_name`]) instead of a pid.
//!
//! [`list`] reads `/proc` (root sees every process; others only their own
//! maps, and the list says how many it could not read) and asks NVML for
//! GPU memory through the same loader as the capture's GPU sampler.

mod clock;
mod facts;
mod maps;
mod names;
mod nvml;

pub use names::{match_name, Candidate, NameError};
pub use nvml::NvmlReport;

use crate::procs;
use serde::Serialize;
use std::collections::BTreeMap;

/// One process using (or ready to use) a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GpuProcess {
    /// Process id (in this server's pid namespace).
    pub pid: i32,
    /// Parent process id (0 when unknown).
    pub ppid: i32,
    /// Kernel command name (`comm`, at most 15 characters).
    pub comm: String,
    /// Command line, arguments separated by spaces (empty when unreadable).
    pub cmdline: String,
    /// Arguments one by one, for name matching.
    #[serde(skip)]
    pub argv: Vec<String>,
    /// Owner: user name, or the numeric uid where none is known.
    pub user: String,
    /// When the process started, UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_at: Option<String>,
    /// Seconds the process has been running.
    pub running_s: Option<u64>,
    /// GPU memory it holds, bytes, summed over its GPUs; `None` where NVML
    /// is absent or does not say.
    pub gpu_memory_bytes: Option<u64>,
    /// NVML indices of the GPUs it has a compute context on (empty where
    /// NVML is absent or does not list it).
    pub gpus: Vec<u32>,
    /// The CUDA driver library mapped in its memory, when it is.
    pub libcuda: Option<String>,
}

/// What [`list`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GpuProcessList {
    /// GPU processes, by pid.
    pub processes: Vec<GpuProcess>,
    /// Processes whose memory map could not be read (another user's,
    /// without root): they may use a GPU too.
    pub unreadable: u32,
    /// Whether NVML was asked and what it said.
    pub nvml: NvmlReport,
}

/// Lists the GPU processes on this host now. Never fails: what could not
/// be read is counted (`unreadable`) or explained (`nvml.error`).
pub fn list() -> GpuProcessList {
    let me = std::process::id() as i32;
    let mut found: BTreeMap<i32, Option<String>> = BTreeMap::new();
    let mut unreadable = 0u32;
    for pid in procs::all_pids() {
        if pid == me {
            continue;
        }
        match maps::libcuda(pid) {
            maps::Mapped::Yes(path) => {
                found.insert(pid, Some(path));
            }
            maps::Mapped::No => {}
            maps::Mapped::Unreadable => unreadable += 1,
        }
    }
    let (nvml, compute) = nvml::compute_processes();
    for p in &compute {
        found.entry(p.pid).or_insert(None);
    }
    let users = facts::Users::load();
    let now = clock::now_epoch_s();
    let processes = found
        .into_iter()
        .map(|(pid, libcuda)| {
            let facts = facts::read(pid, &users);
            let mine: Vec<&nvml::ComputeProcess> =
                compute.iter().filter(|c| c.pid == pid).collect();
            let memory: Option<u64> = if mine.iter().any(|c| c.memory_bytes.is_some()) {
                Some(mine.iter().filter_map(|c| c.memory_bytes).sum())
            } else {
                None
            };
            let mut gpus: Vec<u32> = mine.iter().map(|c| c.gpu).collect();
            gpus.dedup();
            GpuProcess {
                pid,
                ppid: facts.ppid,
                comm: facts.comm,
                cmdline: facts.argv.join(" "),
                argv: facts.argv,
                user: facts.user,
                started_at: facts.started_epoch_s.map(clock::utc_text),
                running_s: facts
                    .started_epoch_s
                    .map(|s| now.saturating_sub(s).max(0) as u64),
                gpu_memory_bytes: memory,
                gpus,
                libcuda,
            }
        })
        .collect();
    GpuProcessList {
        processes,
        unreadable,
        nvml,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_test_process_is_not_listed_and_the_list_is_sorted() {
        let got = list();
        let me = std::process::id() as i32;
        assert!(got.processes.iter().all(|p| p.pid != me));
        let pids: Vec<i32> = got.processes.iter().map(|p| p.pid).collect();
        let mut sorted = pids.clone();
        sorted.sort_unstable();
        assert_eq!(pids, sorted);
    }
}
