//! What the GPU sampler did and what it cost: the `gpu` part of the
//! capture status, so the overhead of measuring the GPU can be reported
//! next to the overhead of the probes.

use serde::Serialize;

/// The GPU sampler's counters, shown in the status and the summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct GpuSamplerStatus {
    /// The NVML library in use; `None` while it loads, when it could not be
    /// used (see the `nvml_unavailable` warning) or when sampling is off.
    pub library: Option<String>,
    /// GPUs sampled.
    pub devices: u32,
    /// Device utilisation samples read from the driver (GPU and memory).
    pub util_samples: u64,
    /// Per-process samples kept (of the traced processes).
    pub process_samples: u64,
    /// Per-process samples of other processes, not kept.
    pub process_samples_ignored: u64,
    /// Device state polls (one row per GPU each).
    pub status_polls: u64,
    /// NVML functions called.
    pub nvml_calls: u64,
    /// Wall time spent inside NVML calls, ns: the sampler's own cost (a
    /// PCIe throughput query alone waits about 20 ms in the driver).
    pub nvml_time_ns: u64,
    /// CPU time the sampler thread used, ns (the PCIe queries mostly wait
    /// in the driver, so this is far below `nvml_time_ns` on a real GPU).
    pub cpu_time_ns: u64,
    /// Calls that failed for a reason other than "nothing new" or "not
    /// supported".
    pub errors: u64,
    /// Queries a GPU does not support, e.g. "gpu 0: power" (answered -1).
    pub unsupported: Vec<String>,
}

impl GpuSamplerStatus {
    /// Counts one NVML call that took `ns`.
    pub fn add_call(&mut self, ns: u64) {
        self.nvml_calls += 1;
        self.nvml_time_ns += ns;
    }

    /// Notes once that `gpu` does not support `what`.
    pub fn note_unsupported(&mut self, gpu: u32, what: &str) {
        let line = format!("gpu {gpu}: {what}");
        if !self.unsupported.contains(&line) {
            self.unsupported.push(line);
        }
    }
}
