//! The ingero capture engine.
//!
//! eBPF uprobes on the CUDA runtime and driver libraries time every traced
//! call; BTF tracepoints record what the kernel did to the same processes
//! (off-CPU intervals, wakeups, page allocations, fork/exec/exit). Records
//! leave the kernel through one ring buffer, are decoded on a polling thread,
//! and are written in batches into the trace store by a writer thread.
//!
//! Entry points: [`start`] a capture from a [`CaptureConfig`], watch it with
//! [`CaptureHandle::status`], end it with [`CaptureHandle::stop`]; [`preflight`]
//! says whether this machine can capture at all.

#![warn(missing_docs)]

mod capture;
pub mod clock;
pub mod config;
mod control;
mod db_prep;
pub mod decode;
pub mod discovery;
mod elf;
pub mod error;
pub mod gpu_processes;
pub mod histogram;
mod holder;
pub mod launch;
pub mod launch_level;
pub mod loader;
mod multi_uprobe;
pub mod nccl_record;
pub mod nvml;
pub mod open_calls;
pub mod page_runs;
mod per_cpu;
mod phase_timer;
mod poller;
pub mod preflight;
pub mod probe_floor;
pub mod procs;
pub mod records;
pub mod render;
mod shared;
pub mod stacks;
pub mod status;
pub mod stop;
pub mod sysinfo;
mod thread_cpu;
pub mod warnings;
mod writer;

pub use capture::{start, CaptureHandle, StopHandle};
pub use config::{CaptureConfig, Target};
pub use error::CaptureError;
pub use preflight::{preflight, CheckItem, CheckReport, CheckStatus};
pub use status::{
    CaptureState, CaptureStatus, CaptureSummary, CaptureWarning, GpuSamplerStatus, HostStatus,
    LossBreakdown, OpStatus, StopReason, WarningKind,
};
