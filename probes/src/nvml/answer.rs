//! What an NVML answer means for the recorder: a value, nothing new, a
//! query this GPU does not support (stored as -1, not an error), or a
//! failure (counted).

use crate::status::GpuSamplerStatus;
use ingero_store::gpu::NOT_AVAILABLE;
use nvml_wrapper::error::NvmlError;

/// An NVML result, sorted by what the sampler does with it.
#[derive(Debug)]
pub enum Answer<T> {
    /// The driver answered.
    Value(T),
    /// No sample newer than the one asked from (NVML_ERROR_NOT_FOUND).
    Nothing,
    /// This GPU cannot answer this query (NVML_ERROR_NOT_SUPPORTED).
    Unsupported,
    /// Anything else (GPU lost, driver error, a symbol missing).
    Failed(NvmlError),
}

impl<T> From<Result<T, NvmlError>> for Answer<T> {
    fn from(r: Result<T, NvmlError>) -> Answer<T> {
        match r {
            Ok(v) => Answer::Value(v),
            Err(NvmlError::NotFound) => Answer::Nothing,
            Err(NvmlError::NotSupported) => Answer::Unsupported,
            Err(e) => Answer::Failed(e),
        }
    }
}

/// A polled field as stored: its value, or -1 where the GPU does not
/// support it (noted once in `status`) or the query failed (counted).
pub fn field(
    status: &mut GpuSamplerStatus,
    gpu: u32,
    what: &str,
    r: Result<u64, NvmlError>,
) -> i64 {
    match Answer::from(r) {
        Answer::Value(v) => i64::try_from(v).unwrap_or(i64::MAX),
        Answer::Nothing => NOT_AVAILABLE,
        Answer::Unsupported => {
            status.note_unsupported(gpu, what);
            NOT_AVAILABLE
        }
        Answer::Failed(e) => {
            status.errors += 1;
            tracing::debug!(gpu, what, error = %e, "NVML query failed");
            NOT_AVAILABLE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsupported_fields_read_minus_one_and_are_not_errors() {
        let mut s = GpuSamplerStatus::default();
        assert_eq!(field(&mut s, 0, "power", Ok(150_000)), 150_000);
        assert_eq!(field(&mut s, 0, "power", Err(NvmlError::NotSupported)), -1);
        assert_eq!(s.errors, 0);
        assert_eq!(s.unsupported, vec!["gpu 0: power".to_string()]);
        assert_eq!(field(&mut s, 1, "clock", Err(NvmlError::GpuLost)), -1);
        assert_eq!(s.errors, 1);
        assert!(matches!(
            Answer::from(Err::<u32, _>(NvmlError::NotFound)),
            Answer::Nothing
        ));
    }
}
