//! Whole-host figures sampled once a second: CPU busy share computed from the
//! simulated cores, run-queue length, load average and memory.

use ingero_store::SystemSnapshot;

/// `exp(-1/60)`: weight of the previous one-minute load average after one second.
const LOAD_DECAY_1S: f64 = 0.983_471_453_821_617_4;

/// Static description of the simulated host's capacity.
#[derive(Debug, Clone, Copy)]
pub struct HostSpec {
    /// Number of cores.
    pub cores: usize,
    /// Round-robin time quantum, ns.
    pub quantum_ns: i64,
    /// Physical memory, bytes.
    pub mem_total: i64,
    /// Memory in use before the simulated programs allocate anything, bytes.
    pub mem_base: i64,
    /// One-minute load average when the simulation starts.
    pub load_start: f64,
}

/// Running totals between two samples.
#[derive(Debug, Clone)]
pub(crate) struct Stats {
    pub busy_ns: i64,
    pub busy_at_sample: i64,
    pub last_sample: i64,
    pub load1: f64,
    pub mem_used: i64,
}

impl Stats {
    pub fn new(spec: &HostSpec, start: i64) -> Stats {
        Stats {
            busy_ns: 0,
            busy_at_sample: 0,
            last_sample: start,
            load1: spec.load_start,
            mem_used: spec.mem_base,
        }
    }

    /// Closes the interval ending at `now` and returns its snapshot.
    pub fn sample(&mut self, spec: &HostSpec, now: i64, runnable: usize) -> SystemSnapshot {
        let span = (now - self.last_sample).max(1) as f64 * spec.cores as f64;
        let busy = (self.busy_ns - self.busy_at_sample) as f64;
        self.busy_at_sample = self.busy_ns;
        self.last_sample = now;
        self.load1 = self.load1 * LOAD_DECAY_1S + runnable as f64 * (1.0 - LOAD_DECAY_1S);
        let used = self.mem_used.clamp(0, spec.mem_total);
        let mib = 1024 * 1024;
        SystemSnapshot {
            ts_ns: now,
            cpu_pct: round2((busy / span * 100.0).clamp(0.0, 100.0)),
            mem_used_pct: round2(used as f64 / spec.mem_total as f64 * 100.0),
            mem_avail_mb: (spec.mem_total - used) / mib,
            swap_used_mb: 0,
            load1: round2(self.load1),
            procs_running: runnable as i64,
        }
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}
