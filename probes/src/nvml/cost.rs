//! What the GPU sampler did and what it cost: the `gpu` part of the
//! capture status, so the overhead of measuring the GPU can be reported
//! next to the overhead of the probes.

use nvml_wrapper::error::NvmlError;
use serde::Serialize;
use std::time::Instant;

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

/// CPU time the calling thread has used since it started, ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Runs one NVML call, adding its duration to `status`.
pub fn timed<T>(
    status: &mut GpuSamplerStatus,
    call: impl FnOnce() -> Result<T, NvmlError>,
) -> Result<T, NvmlError> {
    let t0 = Instant::now();
    let r = call();
    status.add_call(t0.elapsed().as_nanos() as u64);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_and_timed() {
        let mut s = GpuSamplerStatus::default();
        let r = timed(&mut s, || {
            std::thread::sleep(std::time::Duration::from_millis(2));
            Ok(7)
        });
        assert_eq!(r.ok(), Some(7));
        let e: Result<u32, _> = timed(&mut s, || Err(NvmlError::NotSupported));
        assert!(e.is_err());
        assert_eq!(s.nvml_calls, 2);
        assert!(s.nvml_time_ns >= 2_000_000, "{}", s.nvml_time_ns);
        s.note_unsupported(0, "power");
        s.note_unsupported(0, "power");
        assert_eq!(s.unsupported, vec!["gpu 0: power".to_string()]);
    }

    #[test]
    fn thread_cpu_time_grows_with_work() {
        let before = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_ns() > before);
    }
}
