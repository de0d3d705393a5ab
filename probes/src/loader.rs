//! Loads the embedded BPF object, attaches the tracepoints, and attaches the
//! CUDA uprobes once per library file (deduplicated by device and inode).

use crate::error::CaptureError;
use crate::multi_uprobe::{MultiUprobes, ProbePoint};
use crate::per_cpu::per_cpu_total;
use crate::records::{LOSS_CALL_MAP, LOSS_RINGBUF, LOSS_UNFINISHED};
use crate::status::WarningKind;
use crate::warnings::Warnings;
use aya::maps::{Array, HashMap as BpfHashMap, Map, MapData, PerCpuArray, RingBuf};
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
use aya::programs::uprobe::{UProbeAttachLocation, UProbeScope};
use aya::programs::{BtfTracePoint, PerfEvent, TracePoint, UProbe};
use aya::{Btf, Ebpf, EbpfLoader};
use ingero_store::catalog::{CudaApi, CUDA_OPS};
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
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
}

/// Name of the on-CPU stack sampling program (`bpf/stacks.h`).
const STACK_SAMPLER: &str = "on_cpu_sample";

/// Which family of functions a library file provides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LibraryKind {
    /// libcudart: runtime API.
    Runtime,
    /// libcuda: driver API.
    Driver,
    /// libnccl: collectives between ranks.
    Nccl,
    /// Unknown name (given by the user): try every function.
    Any,
}

impl LibraryKind {
    /// Guesses the family from the file name.
    pub fn of(path: &Path) -> LibraryKind {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with("libcudart.so") {
            LibraryKind::Runtime
        } else if name.starts_with("libcuda.so") {
            LibraryKind::Driver
        } else if name.starts_with("libnccl.so") {
            LibraryKind::Nccl
        } else {
            LibraryKind::Any
        }
    }

    fn covers(self, api: CudaApi) -> bool {
        match self {
            LibraryKind::Runtime => api == CudaApi::Runtime,
            LibraryKind::Driver => api == CudaApi::Driver,
            LibraryKind::Nccl => api == CudaApi::Nccl,
            LibraryKind::Any => true,
        }
    }
}

/// Result of attaching one library file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttachOutcome {
    /// Newly probed: this many functions.
    Attached(usize),
    /// The same file (device, inode) is probed already.
    AlreadyAttached,
}

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
    /// Loads every program into the kernel (nothing attached yet).
    pub fn load(opts: LoadOptions) -> Result<Probes, CaptureError> {
        let timer = crate::phase_timer::PhaseTimer::start("program load");
        // The loader parses the kernel's BTF for itself; ours (tracepoint
        // programs, kernel functions of the multi-uprobe programs) is parsed
        // at the same time on another thread.
        let ours = std::thread::spawn(Btf::from_sys_fs);
        let mut loader = EbpfLoader::new();
        let btf = ours
            .join()
            .map_err(|_| CaptureError::NoBtf {
                detail: "the thread reading it panicked".into(),
            })?
            .map_err(|e| CaptureError::NoBtf {
                detail: e.to_string(),
            })?;
        timer.mark("kernel BTF parsed");
        let trace_all: u32 = u32::from(opts.trace_all);
        let offcpu_stacks: u32 = u32::from(opts.offcpu_stacks);
        loader
            .override_global("cfg_trace_all", &trace_all, true)
            .override_global("cfg_offcpu_stacks", &offcpu_stacks, true)
            .override_global("cfg_self_tgid", &opts.self_tgid, true)
            .override_global("cfg_launch_rows", &opts.launch_rows, true)
            .map_max_entries("events", opts.ring_bytes);
        let mut ebpf = loader
            .load(OBJECT)
            .map_err(|e| attach_err("BPF object", e))?;
        timer.mark("object relocated, maps created");
        for (prog, tp) in BTF_TRACEPOINTS {
            let p: &mut BtfTracePoint = program(&mut ebpf, prog)?;
            p.load(tp, &btf).map_err(|e| attach_err(prog, e))?;
        }
        for (prog, _, _) in CLASSIC_TRACEPOINTS {
            let p: &mut TracePoint = program(&mut ebpf, prog)?;
            p.load().map_err(|e| attach_err(prog, e))?;
        }
        let sampler: &mut PerfEvent = program(&mut ebpf, STACK_SAMPLER)?;
        sampler.load().map_err(|e| attach_err(STACK_SAMPLER, e))?;
        timer.mark("tracepoint and sampler programs verified");
        let warnings = Arc::new(Warnings::default());
        let multi = if opts.multi_uprobes {
            let globals = [
                ("cfg_trace_all", trace_all),
                ("cfg_self_tgid", opts.self_tgid),
                ("cfg_launch_sample", opts.launch_sample),
                ("cfg_launch_rows", opts.launch_rows),
            ];
            match MultiUprobes::load(&map_fds(&ebpf), &globals, &btf) {
                Ok(m) => Some(m),
                Err(e) => {
                    warnings.record(
                        WarningKind::MultiUprobeUnavailable,
                        None,
                        format!(
                            "multi-uprobe links unavailable ({e}); probing with one uprobe link \
                             per function, slower to attach and to stop (Linux 6.6+ has them)"
                        ),
                    );
                    None
                }
            }
        } else {
            None
        };
        timer.mark("multi-uprobe programs verified");
        // The one-link-per-function programs are verified up front only
        // where they are the way every library is probed; otherwise a
        // library whose multi-uprobe links fail loads them then.
        if multi.is_none() {
            for op in CUDA_OPS {
                for prefix in ["e_", "r_"] {
                    let name = format!("{prefix}{}", op.name);
                    if ebpf.program(&name).is_some() {
                        load_uprobe(&mut ebpf, &name)?;
                    }
                }
            }
            timer.mark("per-function uprobe programs verified");
        }
        let sampling = opts.launch_sample > 1;
        let launch_sessions = match (&multi, sampling) {
            (_, false) => false,
            (Some(m), true) => match m.session_unavailable() {
                None => true,
                Some(why) => {
                    warnings.record(
                        WarningKind::LaunchSamplingUnavailable,
                        None,
                        format!(
                            "sampled launch timing unavailable ({why}); every launch is timed \
                             (two probe traps per launch)"
                        ),
                    );
                    false
                }
            },
            (None, true) => {
                warnings.record(
                    WarningKind::LaunchSamplingUnavailable,
                    None,
                    "sampled launch timing needs multi-uprobe links; every launch is timed \
                     (two probe traps per launch)"
                        .to_string(),
                );
                false
            }
        };
        let paused = ebpf
            .take_map("paused")
            .ok_or_else(|| load_err("no paused map"))
            .and_then(|m| Array::try_from(m).map_err(load_err))?;
        Ok(Probes {
            ebpf,
            attached: HashSet::new(),
            libraries: Vec::new(),
            links: Vec::new(),
            runtime_launch: Vec::new(),
            paused: Some(paused),
            multi,
            warnings,
            launch_sessions,
            loaders: HashSet::new(),
            mmap_syscalls: false,
        })
    }

    /// Attaches the scheduler, memory and lifecycle tracepoints (and, where
    /// the loader watch cannot be used, the mmap syscall tracepoints).
    pub fn attach_tracepoints(&mut self) -> Result<(), CaptureError> {
        for (prog, tp) in BTF_TRACEPOINTS {
            let p: &mut BtfTracePoint = program(&mut self.ebpf, prog)?;
            let id = p.attach().map_err(|e| attach_err(tp, e))?;
            let link = p.take_link(id).map_err(|e| attach_err(tp, e))?;
            self.links.push(Box::new(link));
        }
        let unavailable = match &self.multi {
            None => Some("the kernel has no multi-uprobe links".to_string()),
            Some(m) => m.loader_watch_unavailable().map(str::to_string),
        };
        if let Some(why) = unavailable {
            self.watch_mmap_syscalls(&why)?;
        }
        Ok(())
    }

    /// Watches the processes of the capture for libraries they map from now
    /// on (dlopen): a trap in `pid`'s dynamic loader at `path` each time it
    /// has mapped or unmapped objects, after which the capture reads the
    /// process's memory map again. Only `pid` traps (every process mapping
    /// `path` with `None`, when tracing the whole machine); other system
    /// calls and mappings cost nothing. Where this cannot be done, the mmap
    /// syscall tracepoints take over for the rest of the capture.
    pub fn watch_loader(&mut self, path: &Path, pid: Option<i32>) -> Result<(), CaptureError> {
        if self.mmap_syscalls {
            return Ok(());
        }
        let pid = pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let Ok(meta) = std::fs::metadata(path) else {
            // The process has gone, or its loader is out of reach.
            return Ok(());
        };
        let key = (meta.dev(), meta.ino(), pid.unwrap_or(0));
        if covered(&self.loaders, key) {
            return Ok(());
        }
        let linked = crate::elf::function_offsets(path, &[LOADER_HOOK])
            .and_then(|o| {
                o.get(LOADER_HOOK)
                    .copied()
                    .ok_or_else(|| format!("it defines no {LOADER_HOOK}"))
            })
            .and_then(|offset| {
                let multi = self
                    .multi
                    .as_ref()
                    .ok_or("the kernel has no multi-uprobe links")?;
                multi
                    .attach_loader_watch(path, offset, pid)
                    .map_err(|e| e.to_string())
            });
        match linked {
            Ok(link) => {
                self.links.push(Box::new(link));
                self.loaders.insert(key);
                Ok(())
            }
            Err(e) => self.watch_mmap_syscalls(&format!("{}: {e}", path.display())),
        }
    }

    /// Attaches the mmap syscall tracepoints (once), the loader watch's
    /// fallback, and says so in the capture's warnings.
    fn watch_mmap_syscalls(&mut self, why: &str) -> Result<(), CaptureError> {
        if self.mmap_syscalls {
            return Ok(());
        }
        self.warnings.record(
            WarningKind::MmapWatchOnSyscallTracepoints,
            None,
            format!(
                "libraries loaded during the capture are watched through the mmap syscall \
                 tracepoints ({why}): while the capture runs, every system call on this host \
                 takes the kernel's traced path"
            ),
        );
        for (prog, cat, name) in CLASSIC_TRACEPOINTS {
            let p: &mut TracePoint = program(&mut self.ebpf, prog)?;
            let id = p.attach(cat, name).map_err(|e| {
                if !Path::new("/sys/kernel/tracing/events").exists()
                    && !Path::new("/sys/kernel/debug/tracing/events").exists()
                {
                    CaptureError::TracefsMissing
                } else {
                    attach_err(&format!("{cat}:{name}"), e)
                }
            })?;
            let link = p
                .take_link(id)
                .map_err(|e| attach_err(&format!("{cat}:{name}"), e))?;
            self.links.push(Box::new(link));
        }
        self.mmap_syscalls = true;
        Ok(())
    }

    /// Starts on-CPU stack sampling: one software CPU-clock perf event per
    /// online CPU at `hz` samples per second, each running the sampling
    /// program (which keeps only the traced tree). Returns the number of
    /// CPUs sampled.
    pub fn attach_stack_sampler(&mut self, hz: u32) -> Result<usize, CaptureError> {
        let cpus = aya::util::online_cpus()
            .map_err(|(what, e)| attach_err(&format!("online CPUs ({what})"), e))?;
        let p: &mut PerfEvent = program(&mut self.ebpf, STACK_SAMPLER)?;
        for cpu in &cpus {
            let what = || format!("CPU-clock sampling on CPU {cpu}");
            let id = p
                .attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu: *cpu },
                    SamplePolicy::Frequency(u64::from(hz)),
                    false,
                )
                .map_err(|e| attach_err(&what(), e))?;
            let link = p.take_link(id).map_err(|e| attach_err(&what(), e))?;
            self.links.push(Box::new(link));
        }
        Ok(cpus.len())
    }

    /// Probes every known CUDA function the library at `path` defines, in
    /// process `pid` only (its forks that do not exec are filtered out in
    /// the kernel), or with `None` in every process that maps it. `path`
    /// may point into another mount namespace through `/proc/PID/root`.
    pub fn attach_library(
        &mut self,
        path: &Path,
        pid: Option<i32>,
    ) -> Result<AttachOutcome, CaptureError> {
        let pid = pid.and_then(|p| u32::try_from(p).ok()).filter(|p| *p > 0);
        let unusable = |detail: String| CaptureError::LibraryNotUsable {
            path: path.to_path_buf(),
            detail,
        };
        let meta = std::fs::metadata(path).map_err(|e| unusable(e.to_string()))?;
        let key = (meta.dev(), meta.ino(), pid.unwrap_or(0));
        if covered(&self.attached, key) {
            return Ok(AttachOutcome::AlreadyAttached);
        }
        let kind = LibraryKind::of(path);
        let wanted: Vec<&str> = CUDA_OPS
            .iter()
            .filter(|o| kind.covers(o.api))
            .map(|o| o.name)
            .collect();
        let offsets = crate::elf::function_offsets(path, &wanted).map_err(unusable)?;
        if offsets.is_empty() {
            return Err(unusable(
                "it defines none of the CUDA functions ingero traces".into(),
            ));
        }
        let ops: Vec<_> = CUDA_OPS
            .iter()
            .filter(|o| kind.covers(o.api))
            .filter_map(|o| offsets.get(o.name).map(|&off| (o, off)))
            .collect();
        let mut attached_multi = false;
        if let Some(multi) = &self.multi {
            let points: Vec<ProbePoint> = ops
                .iter()
                .map(|(o, offset)| ProbePoint {
                    offset: *offset,
                    op_id: u64::from(o.id),
                })
                .collect();
            // The runtime's launch functions get links of their own.
            let (launch, rest): (Vec<ProbePoint>, Vec<ProbePoint>) =
                points.into_iter().partition(|p| {
                    kind == LibraryKind::Runtime
                        && crate::launch_level::RUNTIME_LAUNCH_OPS.contains(&(p.op_id as u32))
                });
            // Under sampled launch timing, the driver's launch functions go
            // to the session program; if that link fails they are probed
            // like the rest (every launch timed).
            let (sessions, rest): (Vec<ProbePoint>, Vec<ProbePoint>) =
                rest.into_iter().partition(|p| {
                    self.launch_sessions
                        && crate::launch_level::DRIVER_LAUNCH_OPS.contains(&(p.op_id as u32))
                });
            let attached = multi.attach(path, &rest, pid).and_then(|links| {
                let launch_links = if launch.is_empty() {
                    None
                } else {
                    Some(multi.attach(path, &launch, pid)?)
                };
                Ok((links, launch_links))
            });
            let attached = attached.and_then(|(links, launch_links)| {
                let session_links = self.attach_launch_sessions(multi, path, &sessions, pid)?;
                Ok((links, launch_links, session_links))
            });
            match attached {
                Ok((links, launch_links, session_links)) => {
                    self.links
                        .extend(links.map(|l| Box::new(l) as Box<dyn Send>));
                    self.links.extend(
                        session_links
                            .into_iter()
                            .map(|l| Box::new(l) as Box<dyn Send>),
                    );
                    if let Some([ret, enter]) = launch_links {
                        self.runtime_launch.push([Some(ret), Some(enter)]);
                    }
                    attached_multi = true;
                }
                Err(e) => self.warnings.record(
                    WarningKind::PerFunctionFallback,
                    Some(path),
                    format!(
                        "{}: multi-uprobe links failed ({e}); probing it with one uprobe link \
                         per function, slower to attach and to stop",
                        path.display()
                    ),
                ),
            }
        }
        if !attached_multi {
            for (op, offset) in &ops {
                // Return probe first, as for the multi links.
                for prefix in ["r_", "e_"] {
                    let name = format!("{prefix}{}", op.name);
                    load_uprobe(&mut self.ebpf, &name)?;
                    let p: &mut UProbe = program(&mut self.ebpf, &name)?;
                    let what = || format!("{} in {}", op.name, path.display());
                    let id = p
                        .attach(
                            UProbeAttachLocation::AbsoluteOffset(*offset),
                            path,
                            // A perf-event uprobe bound to a pid follows one
                            // thread, not the process: these stay global.
                            UProbeScope::AllProcesses,
                        )
                        .map_err(|e| attach_err(&what(), e))?;
                    let link = p.take_link(id).map_err(|e| attach_err(&what(), e))?;
                    self.links.push(Box::new(link));
                }
            }
        }
        let count = ops.len();
        self.attached.insert(if attached_multi {
            key
        } else {
            (key.0, key.1, 0)
        });
        if !self.libraries.iter().any(|l| l == path) {
            self.libraries.push(path.to_path_buf());
        }
        Ok(AttachOutcome::Attached(count))
    }

    /// Links the driver launch functions `points` of `path` to the session
    /// program (sampled launch timing); when that link fails, says so and
    /// probes them with an ordinary pair instead (every launch timed).
    fn attach_launch_sessions(
        &self,
        multi: &MultiUprobes,
        path: &Path,
        points: &[ProbePoint],
        pid: Option<u32>,
    ) -> Result<Vec<std::os::fd::OwnedFd>, crate::multi_uprobe::MultiUprobeError> {
        if points.is_empty() {
            return Ok(Vec::new());
        }
        match multi.attach_session(path, points, pid) {
            Ok(link) => Ok(vec![link]),
            Err(e) => {
                self.warnings.record(
                    WarningKind::LaunchSamplingUnavailable,
                    Some(path),
                    format!(
                        "{}: launch session link failed ({e}); every launch is timed",
                        path.display()
                    ),
                );
                Ok(multi.attach(path, points, pid)?.into())
            }
        }
    }

    /// Takes the kernel's launch counters by level.
    pub fn take_launch_levels(
        &mut self,
    ) -> Result<crate::launch_level::LaunchLevels, CaptureError> {
        let map = self.take_map("launch_levels")?;
        Ok(crate::launch_level::LaunchLevels::new(
            PerCpuArray::try_from(map).map_err(load_err)?,
        ))
    }

    /// True when some runtime launch functions still have their entry
    /// probe linked (links attached since the last detach included).
    pub fn has_runtime_launch_entries(&self) -> bool {
        self.runtime_launch.iter().any(|l| l[1].is_some())
    }

    /// Detaches the entry side of the runtime launch probes: no new runtime
    /// launch is seen from now on (the driver probe sees it).
    pub fn detach_runtime_launch_entries(&mut self) {
        for l in &mut self.runtime_launch {
            drop(l[1].take());
        }
    }

    /// Detaches the return side of the runtime launch probes whose entry
    /// side is gone (call once no runtime launch is in flight); links
    /// attached since keep both sides.
    pub fn detach_runtime_launch_returns(&mut self) {
        for l in &mut self.runtime_launch {
            if l[1].is_none() {
                drop(l[0].take());
            }
        }
        self.runtime_launch
            .retain(|l| l.iter().any(Option::is_some));
    }

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

    /// Takes the ring buffer (the poller thread owns it from then on).
    pub fn take_ring(&mut self) -> Result<RingBuf<MapData>, CaptureError> {
        let map = self.take_map("events")?;
        RingBuf::try_from(map).map_err(load_err)
    }

    /// Takes the map `name` out of the loaded object, for user space to own.
    fn take_map(&mut self, name: &str) -> Result<Map, CaptureError> {
        self.ebpf
            .take_map(name)
            .ok_or_else(|| load_err(format!("no {name} map")))
    }

    /// Takes the table of traced processes, for seeding targets.
    pub fn take_tracked(&mut self) -> Result<TrackedMap, CaptureError> {
        let map = self.take_map("tracked")?;
        Ok(TrackedMap {
            map: BpfHashMap::try_from(map).map_err(load_err)?,
        })
    }

    /// Takes the table of calls in flight (read at stop for calls that are
    /// still open).
    pub fn take_open_calls(&mut self) -> Result<crate::open_calls::OpenCalls, CaptureError> {
        let map = self.take_map("threads")?;
        crate::open_calls::OpenCalls::new(map).map_err(load_err)
    }

    /// Takes the per-CPU page-allocation runs (read at stop for runs that
    /// have not been sent).
    pub fn take_page_runs(&mut self) -> Result<crate::page_runs::OpenPageRuns, CaptureError> {
        let map = self.take_map("page_runs")?;
        crate::page_runs::OpenPageRuns::new(map).map_err(load_err)
    }

    /// Takes the per-CPU loss counters.
    pub fn take_losses(&mut self) -> Result<LossCounters, CaptureError> {
        let map = self.take_map("losses")?;
        Ok(LossCounters {
            map: PerCpuArray::try_from(map).map_err(load_err)?,
        })
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

/// The kernel's set of traced process ids.
pub struct TrackedMap {
    map: BpfHashMap<MapData, u32, u32>,
}

impl TrackedMap {
    /// Starts tracing `pid` (and, through fork, its future children).
    pub fn insert(&mut self, pid: i32) -> Result<(), CaptureError> {
        self.map
            .insert(pid as u32, 1, 0)
            .map_err(|e| load_err(format!("cannot track pid {pid}: {e}")))
    }

    /// Number of processes currently traced.
    pub fn len(&self) -> usize {
        self.map.keys().filter(|k| k.is_ok()).count()
    }

    /// True when no process is traced.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Kernel-side drop counters (slots as in `bpf/ingero_events.h`).
pub struct LossCounters {
    map: PerCpuArray<MapData, u64>,
}

/// Totals of the loss counters, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Records dropped because the ring buffer was full.
    pub ring_full: u64,
    /// Calls not timed because the in-flight table was full.
    pub call_table_full: u64,
    /// Calls whose thread exited inside them (recorded, never returned).
    pub unfinished: u64,
}

impl LossCounters {
    /// Reads the current totals.
    pub fn read(&self) -> Losses {
        let sum = |slot: u32| per_cpu_total(&self.map, slot);
        Losses {
            ring_full: sum(LOSS_RINGBUF),
            call_table_full: sum(LOSS_CALL_MAP),
            unfinished: sum(LOSS_UNFINISHED),
        }
    }
}
