//! The ingero capture engine.
//!
//! eBPF uprobes on the CUDA runtime and driver libraries time every traced
//! call; BTF tracepoints record what the kernel did to the same processes
//! (off-CPU intervals, wakeups, page allocations, fork/exec/exit). Records
//! leave the kernel through one ring buffer, are decoded on a polling thread,
//! and are written in batches into the trace store by a writer thread.

pub mod clock;
pub mod config;
pub mod decode;
mod elf;
pub mod error;
pub mod loader;

pub use config::{CaptureConfig, Target};
pub use error::CaptureError;
