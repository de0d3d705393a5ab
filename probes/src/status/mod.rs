//! Every status type of a capture: the live counters the capture threads
//! update, and the serialisable status and summary views the CLI and the
//! MCP server show.
//!
//! They sit here, below the threads that fill them in (the samplers, the
//! poller, the writer, the control thread), so that each of those depends
//! on this module and this module on none of them.

mod capture_status;
mod gpu_sampler;
mod launch_levels;
mod live_stats;
mod losses;
mod stack_status;
mod summary;
mod warning;

pub use capture_status::{CaptureState, CaptureStatus, HostStatus, OpStatus};
pub use gpu_sampler::GpuSamplerStatus;
pub use launch_levels::LaunchLevelStatus;
pub use live_stats::LiveStats;
pub use losses::LossBreakdown;
pub use stack_status::StackStatus;
pub use summary::{CaptureSummary, StopReason};
pub use warning::{CaptureWarning, WarningKind};
