//! `list_gpu_processes`' answer: the host's GPU processes
//! ([`ingero_probes::gpu_processes`]) each marked with the capture of this
//! server tracing it, if any.

use ingero_probes::gpu_processes::{GpuProcess, GpuProcessList, NvmlReport};
use ingero_probes::{procs, Target};
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::HashMap;

/// The GPU processes on this host.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct GpuProcesses {
    /// One per process, by pid.
    pub processes: Vec<ListedProcess>,
    /// Processes whose memory map this server could not read (another
    /// user's, without root); they may use a GPU too.
    pub unreadable: u32,
    /// Whether NVML (GPU memory, processes without a mapped driver library)
    /// answered, and why not when it did not.
    pub nvml: NvmlReport,
}

/// One GPU process, and whether a capture of this server traces it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListedProcess {
    /// What the host says about it.
    #[serde(flatten)]
    pub process: GpuProcess,
    /// True when a running capture of this server traces it.
    pub traced: bool,
    /// That capture's database file name.
    pub traced_by: Option<String>,
}

/// Marks each process of `list` traced by one of `running` (each capture's
/// target and database name).
pub fn mark(list: GpuProcessList, running: &[(Target, String)]) -> GpuProcesses {
    let mut by_pid: HashMap<i32, String> = HashMap::new();
    let mut everything: Option<String> = None;
    for (target, name) in running {
        match target {
            Target::Pid(root) => {
                for pid in procs::tree(*root) {
                    by_pid.entry(pid).or_insert_with(|| name.clone());
                }
            }
            Target::AllProcesses => {
                everything.get_or_insert_with(|| name.clone());
            }
            Target::Command(_) => {}
        }
    }
    let processes = list
        .processes
        .into_iter()
        .map(|process| {
            let traced_by = by_pid
                .get(&process.pid)
                .cloned()
                .or_else(|| everything.clone());
            ListedProcess {
                traced: traced_by.is_some(),
                traced_by,
                process,
            }
        })
        .collect();
    GpuProcesses {
        processes,
        unreadable: list.unreadable,
        nvml: list.nvml,
    }
}

/// One line per process, for the text part of the result.
pub fn text(list: &GpuProcesses) -> String {
    let mut out = format!("{} GPU process(es)", list.processes.len());
    if list.unreadable > 0 {
        out.push_str(&format!(
            " ({} process(es) could not be inspected: run the server as root to see them)",
            list.unreadable
        ));
    }
    if let Some(e) = &list.nvml.error {
        out.push_str(&format!("; no GPU memory figures: {e}"));
    }
    for p in &list.processes {
        let g = &p.process;
        let memory = g
            .gpu_memory_bytes
            .map(|b| format!(", {} GPU memory", super::limits::bytes_text(b)))
            .unwrap_or_default();
        let traced = p
            .traced_by
            .as_deref()
            .map(|n| format!(", traced into {n}"))
            .unwrap_or_default();
        let command = if g.cmdline.is_empty() {
            &g.comm
        } else {
            &g.cmdline
        };
        out.push_str(&format!(
            "\npid {} [{}] {}: {}{}{}",
            g.pid,
            g.user,
            g.started_at.as_deref().unwrap_or("start unknown"),
            command,
            memory,
            traced
        ));
    }
    out
}
