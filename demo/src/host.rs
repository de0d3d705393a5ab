//! The fixed simulated machine every scenario runs on, and the session and
//! process rows that describe it.

use crate::sim::HostSpec;
use ingero_store::{ProcessInfo, SessionInfo};

/// 2026-01-01T00:00:00Z in ns since the Unix epoch: every demo starts here,
/// so files generated twice are identical.
pub const EPOCH_NS: i64 = 1_767_225_600_000_000_000;

/// Nanoseconds per second.
pub const SEC: i64 = 1_000_000_000;
/// Nanoseconds per millisecond.
pub const MS: i64 = 1_000_000;
/// Nanoseconds per microsecond.
pub const US: i64 = 1_000;
/// Bytes per MiB.
pub const MIB: i64 = 1024 * 1024;

/// Host name recorded in every demo session.
pub const HOST_NAME: &str = "demo-host";

/// Scheduler time quantum (a 250 Hz tick).
pub const QUANTUM_NS: i64 = 4 * MS;

/// A host with `cores` cores and `mem_gib` GiB of memory.
pub fn host_spec(cores: usize, mem_gib: i64) -> HostSpec {
    HostSpec {
        cores,
        quantum_ns: QUANTUM_NS,
        mem_total: mem_gib * 1024 * MIB,
        mem_base: mem_gib * 1024 * MIB / 5,
        load_start: 0.4,
    }
}

/// The session row for a demo on `spec`.
pub fn session(spec: &HostSpec, target_pids: Vec<i32>, command: &str) -> SessionInfo {
    SessionInfo {
        host: HOST_NAME.into(),
        kernel: "6.8.0-demo".into(),
        cpu_model: format!("Simulated x86_64 CPU ({} cores)", spec.cores),
        cpu_cores: spec.cores as i64,
        mem_total_mb: spec.mem_total / MIB,
        gpu_model: "Simulated GPU".into(),
        gpu_driver: "550.0-demo".into(),
        started_ns: EPOCH_NS,
        stopped_ns: 0,
        target_pids,
        command: command.into(),
        tool_version: format!("ingero {} demo", env!("CARGO_PKG_VERSION")),
    }
}

/// A process row; first and last seen are filled in once the simulation ran.
pub fn process(pid: i32, ppid: i32, comm: &str, cmdline: &str) -> ProcessInfo {
    ProcessInfo {
        pid,
        ppid,
        comm: comm.into(),
        cmdline: cmdline.into(),
        first_seen_ns: 0,
        last_seen_ns: 0,
    }
}
