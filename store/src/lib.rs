//! The ingero trace store.
//!
//! One schema ([`schema`]) for every capture, a batched [`TraceWriter`] that
//! live capture and the demo generator both use, and a read-only [`TraceDb`]
//! that opens native files and Ingero (Go) files alike and presents both under
//! the same table names, so the analysis engine has one dialect to speak.

pub mod activity;
pub mod aggregate;
pub mod call_fold;
mod capture_file;
pub mod catalog;
pub mod clip;
mod compat;
pub mod endings;
pub mod epoch_ns;
pub mod error;
mod extend;
mod foreign;
pub mod gpu;
mod insert_rows;
pub mod integrity;
pub mod launch_levels;
pub mod merge;
pub mod model;
pub mod nccl;
pub mod nesting;
pub mod open;
mod reserve;
pub mod safe_open;
pub mod schema;
pub mod stacks;
pub mod thread_samples;
pub mod window;
pub mod writer;
mod writer_finish;
mod writer_gpu;
mod writer_nccl;
mod writer_stacks;

pub use call_fold::CallFold;
pub use catalog::{AggSource, CudaApi, HostKind, OpClass};
pub use endings::SessionEnding;
pub use error::{Result, StoreError};
pub use gpu::{GpuDevice, GpuProcessSample, GpuSamples, GpuStatus, GpuUtilKind, GpuUtilSample};
pub use launch_levels::LaunchLevelChange;
pub use model::{CudaCall, Event, HostEvent, LaunchRun, ProcessInfo, SessionInfo, SystemSnapshot};
pub use nccl::{JobPlace, NcclCall};
pub use open::{side_files, wal_file, DbFormat, TraceDb};
pub use stacks::{FrameKind, StackFrame, StackKind, StackSample};
pub use window::{parse_duration_ns, CaptureSpan, ResolvedWindow, TimeWindow};
pub use writer::{PreparedDb, RawPolicy, TraceWriter};
pub use writer_finish::Closed;
