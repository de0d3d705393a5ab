//! Capture errors. Each message says what to do about it.

use std::path::PathBuf;

/// Everything that can stop a capture from starting or finishing.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Missing privileges for loading and attaching eBPF programs.
    #[error("not permitted to trace ({detail}): run as root or grant CAP_BPF+CAP_PERFMON (e.g. `sudo ingero trace ...`)")]
    NotPermitted {
        /// What was checked.
        detail: String,
    },
    /// The kernel exposes no BTF type information.
    #[error("kernel BTF is missing ({detail}): boot a kernel built with CONFIG_DEBUG_INFO_BTF=y (most distribution kernels since 5.4 are)")]
    NoBtf {
        /// What was found instead.
        detail: String,
    },
    /// tracefs is not mounted, so kernel tracepoints cannot be found.
    #[error("tracefs is not mounted: run `mount -t tracefs nodev /sys/kernel/tracing` (as root) and retry")]
    TracefsMissing,
    /// The running kernel lacks features the capture needs.
    #[error("kernel {found} is too old: ingero needs Linux 5.8 or newer (BPF ring buffer, BTF tracepoints)")]
    KernelTooOld {
        /// `uname -r` of the running kernel.
        found: String,
    },
    /// The kernel refused the eBPF programs.
    #[error(
        "loading the eBPF programs failed: {detail}; run `ingero check` to see what is missing"
    )]
    Load {
        /// Loader or verifier message.
        detail: String,
    },
    /// A probe could not be attached.
    #[error("attaching {what} failed: {detail}; run `ingero check`")]
    Attach {
        /// Probe point.
        what: String,
        /// Kernel or loader message.
        detail: String,
    },
    /// No CUDA library was found where one was required.
    #[error("no CUDA library found (looked in {searched}): pass --lib /path/to/libcudart.so.N, or start the capture after the process has loaded CUDA")]
    NoCudaLibrary {
        /// Places that were searched.
        searched: String,
    },
    /// A library given explicitly cannot be probed.
    #[error("{path}: cannot probe this library ({detail}); pass the path of a libcudart.so or libcuda.so file")]
    LibraryNotUsable {
        /// The library.
        path: PathBuf,
        /// Why.
        detail: String,
    },
    /// The target process does not exist.
    #[error("process {0} does not exist: check the pid with `ps`")]
    NoSuchProcess(i32),
    /// The command to trace could not be started.
    #[error("cannot start {command:?}: {detail}")]
    Spawn {
        /// Command line.
        command: String,
        /// OS error.
        detail: String,
    },
    /// The ring buffer size is not a power of two of at least one page
    /// (the kernel refuses any other size).
    #[error("ring buffer size {0} bytes is not usable: give a power of two of at least 4096 (e.g. 4K, 1M, 64M)")]
    BadRingSize(u64),
    /// `Target::Command` with no program.
    #[error("empty command: give the program to run, e.g. --cmd \"python train.py\"")]
    EmptyCommand,
    /// The trace database could not be written.
    #[error(transparent)]
    Store(#[from] ingero_store::StoreError),
    /// A capture thread died unexpectedly.
    #[error("capture thread failed: {0}")]
    Internal(String),
}

impl CaptureError {
    /// True when the user can fix the cause (permissions, setup, arguments).
    /// A database path that cannot be written to (a link, another user's
    /// file, a database that is not an ingero trace) counts as such.
    pub fn is_setup_problem(&self) -> bool {
        match self {
            CaptureError::Internal(_) => false,
            CaptureError::Store(e) => e.is_bad_input(),
            _ => true,
        }
    }
}
