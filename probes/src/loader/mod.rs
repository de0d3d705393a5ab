//! Loads the embedded BPF object ([`load`](Probes::load)), attaches the
//! tracepoints, and attaches the CUDA uprobes once per library file
//! (deduplicated by device and inode).

mod library;
mod load;
mod loader_watch;
mod maps;
mod runtime_launch;
mod stack_sampler;
mod tracepoints;

pub use library::{AttachOutcome, LibraryKind};
pub use maps::{LossCounters, Losses, TrackedMap};

use crate::error::CaptureError;
use crate::multi_uprobe::MultiUprobes;
use crate::warnings::Warnings;
use aya::maps::{Array, Map, MapData};
use aya::programs::UProbe;
use aya::Ebpf;
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::Arc;

/// The compiled kernel programs (`bpf/ingero.bpf.c`, built by build.rs).
static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/ingero.bpf.o"));

/// BTF tracepoints: program name and kernel tracepoint name.
const BTF_TRACEPOINTS: &[(&str, &str)] = &[
    ("on_switch", "sched_switch"),
    ("on_wakeup", "sched_wakeup"),
    ("on_page_alloc", "mm_page_alloc"),
    ("on_fork", "sched_process_fork"),
    ("on_exec", "sched_process_exec"),
    ("on_exit", "sched_process_exit"),
];

/// The dynamic loader's hook for debuggers, called before and after every
/// dlopen and dlclose: where the loader watch traps (see
/// [`Probes::watch_loader`]).
const LOADER_HOOK: &str = "_dl_debug_state";

/// Classic tracepoints: program name, category, event. The fallback of the
/// loader watch where the kernel has no multi-uprobe links: while a syscall
/// tracepoint is attached, every system call on the host takes the kernel's
/// traced path.
const CLASSIC_TRACEPOINTS: &[(&str, &str, &str)] = &[
    ("on_mmap_enter", "syscalls", "sys_enter_mmap"),
    ("on_mmap_exit", "syscalls", "sys_exit_mmap"),
];

/// Knobs fixed at load time.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// Trace every process (no pid filter) instead of the tracked tree.
    pub trace_all: bool,
    /// Our own process id, never traced.
    pub self_tgid: u32,
    /// Ring buffer size in bytes.
    pub ring_bytes: u32,
    /// Attach the CUDA probes with multi-uprobe links where the kernel has
    /// them (one link per library and direction, released in one grace
    /// period); `false` forces one perf-event link per function.
    pub multi_uprobes: bool,
    /// Walk the user and kernel stack of a CUDA-calling thread each time it
    /// leaves the CPU (`bpf/stacks.h`).
    pub offcpu_stacks: bool,
    /// Time one outer driver launch in this many per thread (0 or 1: all);
    /// see [`crate::config::CaptureConfig::launch_sample`].
    pub launch_sample: u32,
    /// Keep one timed outer launch row in this many (0 or 1: all); see
    /// [`crate::config::CaptureConfig::launch_rows`].
    pub launch_rows: u32,
    /// Raw rows per second per thread and op of fast calls (0: every
    /// call); see [`crate::config::CaptureConfig::call_rows`].
    pub call_rows: u32,
}

/// Name of the on-CPU stack sampling program (`bpf/stacks.h`).
const STACK_SAMPLER: &str = "on_cpu_sample";

/// The loaded kernel side: programs, attachments and the maps user space uses.
pub struct Probes {
    ebpf: Ebpf,
    /// Library files probed, by (device, inode, pid); pid 0 when probed in
    /// every process.
    attached: HashSet<(u64, u64, u32)>,
    libraries: Vec<PathBuf>,
    links: Vec<Box<dyn Send>>,
    paused: Option<Array<MapData, u32>>,
    multi: Option<MultiUprobes>,
    warnings: Arc<Warnings>,
    /// The runtime launch functions' own multi-uprobe links (return, entry),
    /// kept apart so they can go once the driver level sees every launch
    /// (see [`crate::launch_level`]).
    runtime_launch: Vec<[Option<std::os::fd::OwnedFd>; 2]>,
    /// Sampled launch timing is on: driver launches go to the session
    /// program.
    launch_sessions: bool,
    /// Dynamic loader files watched, by (device, inode, pid); pid 0 when
    /// watched in every process.
    loaders: HashSet<(u64, u64, u32)>,
    /// The mmap syscall tracepoints stand in for the loader watch.
    mmap_syscalls: bool,
}

/// Whether `set` of (device, inode, pid) links already covers `key`: the
/// file linked for that process, or for every process (pid 0).
fn covered(set: &HashSet<(u64, u64, u32)>, key: (u64, u64, u32)) -> bool {
    set.contains(&key) || set.contains(&(key.0, key.1, 0))
}

fn load_err(e: impl std::fmt::Display) -> CaptureError {
    CaptureError::Load {
        detail: e.to_string(),
    }
}

fn attach_err(what: &str, e: impl std::error::Error) -> CaptureError {
    let mut detail = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        detail.push_str(": ");
        detail.push_str(&s.to_string());
        src = s.source();
    }
    CaptureError::Attach {
        what: what.to_string(),
        detail,
    }
}

impl Probes {
    /// Makes every program return at once; nothing more is recorded.
    pub fn pause(&mut self) {
        if let Some(p) = self.paused.as_mut() {
            let _ = p.set(0, 1, 0);
        }
    }

    /// Stops recording and detaches every probe (see [`Drop`] for how).
    pub fn detach_all(self) {
        drop(self);
    }

    /// Whether the CUDA probes go through multi-uprobe links.
    pub fn uses_multi_uprobes(&self) -> bool {
        self.multi.is_some()
    }

    /// Library files probed so far.
    pub fn libraries(&self) -> &[PathBuf] {
        &self.libraries
    }

    /// Where these probes record their warnings (fallbacks); the capture
    /// adds its own (libraries it could not probe) to the same list.
    pub fn warnings(&self) -> Arc<Warnings> {
        self.warnings.clone()
    }
}

impl Drop for Probes {
    /// Pauses the programs, then detaches. Detaching is slow in the kernel
    /// (see [`crate::holder`]), so a holder process does the final release.
    fn drop(&mut self) {
        self.pause();
        let holder = crate::holder::Holder::spawn();
        drop(std::mem::take(&mut self.links));
        drop(std::mem::take(&mut self.runtime_launch));
        if let Some(h) = holder {
            // Our references to the maps and programs go too before release.
            self.paused = None;
            h.release();
        }
    }
}

/// Verifies the one-link uprobe program `name` unless it already is.
fn load_uprobe(ebpf: &mut Ebpf, name: &str) -> Result<(), CaptureError> {
    let p: &mut UProbe = program(ebpf, name)?;
    if p.fd().is_err() {
        p.load().map_err(|e| attach_err(name, e))?;
    }
    Ok(())
}

/// Descriptors of the loaded maps by name, for the multi-uprobe programs.
fn map_fds(ebpf: &Ebpf) -> HashMap<String, BorrowedFd<'_>> {
    ebpf.maps()
        .filter_map(|(name, map)| {
            let data = match map {
                Map::Array(d)
                | Map::HashMap(d)
                | Map::LruHashMap(d)
                | Map::PerCpuArray(d)
                | Map::PerCpuHashMap(d)
                | Map::RingBuf(d) => d,
                _ => return None,
            };
            Some((name.to_string(), data.fd().as_fd()))
        })
        .collect()
}

fn program<'a, T>(ebpf: &'a mut Ebpf, name: &str) -> Result<&'a mut T, CaptureError>
where
    &'a mut T: TryFrom<&'a mut aya::programs::Program>,
{
    let p = ebpf
        .program_mut(name)
        .ok_or_else(|| load_err(format!("program {name} missing from the object")))?;
    p.try_into()
        .map_err(|_| load_err(format!("program {name} has an unexpected type")))
}
