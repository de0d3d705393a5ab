//! Measured GPU activity through NVML, sampled during every capture where
//! the NVIDIA driver's management library loads.
//!
//! The CUDA probes only see when the host called the GPU; the driver knows
//! when the GPU was busy. A thread ([`sampler`]) loads `libnvidia-ml.so.1`
//! at run time ([`load`]; the binary does not link it), drains the driver's
//! utilisation sample buffers per GPU and per process ([`buffers`],
//! [`cursor`]), polls memory, PCIe, clocks, power and clock-event reasons
//! ([`device`]), converts the driver's wall-clock stamps to the capture
//! clock ([`clock`]) and sends the rows to the writer thread. Where NVML is
//! missing the capture goes on with one warning; what the sampler costs is
//! in the status ([`cost`]).

pub(crate) mod answer;
pub(crate) mod buffers;
pub mod clock;
pub mod cost;
pub(crate) mod cursor;
pub(crate) mod device;
pub mod load;
pub mod pids;
pub(crate) mod sampler;

pub use crate::status::GpuSamplerStatus;
pub use load::{NvmlUnavailable, NVML_LIB_ENV};
pub use pids::TracedPids;
