//! What the GPU sampler costs: every NVML call is timed into its status
//! ([`GpuSamplerStatus`]), so the overhead of measuring the GPU can be
//! reported next to the overhead of the probes.

use crate::status::GpuSamplerStatus;
use nvml_wrapper::error::NvmlError;
use std::time::Instant;

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
}
