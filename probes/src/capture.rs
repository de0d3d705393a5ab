//! `start` wires a capture together (probes, writer, poller, control thread)
//! and returns a handle for status and stop.

use crate::clock::Clock;
use crate::config::{CaptureConfig, Target};
use crate::control::Control;
use crate::discovery;
use crate::error::CaptureError;
use crate::launch::{spawn_held, HeldChild};
use crate::loader::{LoadOptions, Probes};
use crate::nvml::sampler::{self as gpu_sampler, SamplerConfig, SamplerLinks};
use crate::nvml::TracedPids;
use crate::poller::{self, PollerConfig, StackRoute};
use crate::shared::Shared;
use crate::stacks::python::{self as py_sampler, LivePids, PythonLinks};
use crate::stacks::spawn_symbolizer;
use crate::status::{
    CaptureState, CaptureStatus, CaptureSummary, GpuSamplerStatus, LaunchLevelStatus, LiveStats,
    StackStatus,
};
use crate::stop::{StopRequest, WriterFailure};
use crate::{preflight, procs, sysinfo, writer};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Batches the writer may have queued (each at most 32k events).
const WRITER_QUEUE: usize = 16;
/// Lifecycle notices the control thread may have queued.
const NOTICE_QUEUE: usize = 65_536;
/// Batches of raw stacks the symboliser may have queued.
const STACK_QUEUE: usize = 256;

/// A running capture.
pub struct CaptureHandle {
    shared: Arc<Shared>,
    control: JoinHandle<Result<CaptureSummary, CaptureError>>,
    ended: Arc<Ended>,
}

/// Set when the control thread returns (or unwinds), so a caller can sleep
/// until the capture ends instead of polling for it.
#[derive(Default)]
struct Ended {
    done: std::sync::Mutex<bool>,
    signal: std::sync::Condvar,
}

/// Sets [`Ended`] when dropped: on every way out of the control thread.
struct EndedOnDrop(Arc<Ended>);

impl Drop for EndedOnDrop {
    fn drop(&mut self) {
        let mut done = match self.0.done.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        *done = true;
        self.0.signal.notify_all();
    }
}

/// A cheap, clonable way to ask a capture to stop (from a signal handler
/// thread, for instance) without owning its handle.
#[derive(Clone)]
pub struct StopHandle {
    shared: Arc<Shared>,
}

impl StopHandle {
    /// Asks the capture to stop; `CaptureHandle::wait` then returns. The
    /// file records the ending as "stop requested".
    pub fn stop(&self) {
        self.request_stop(crate::stop::REQUESTED);
    }

    /// Asks the capture to stop for `reason` ("SIGTERM", "stop_trace
    /// requested"), which the file records as its `stop_reason` (the first
    /// reason given wins).
    pub fn request_stop(&self, reason: &str) {
        self.shared.stop.request(reason);
    }
}

impl CaptureHandle {
    /// Current counters and state.
    pub fn status(&self) -> CaptureStatus {
        self.shared.status()
    }

    /// A handle that can stop the capture from elsewhere.
    pub fn stopper(&self) -> StopHandle {
        StopHandle {
            shared: self.shared.clone(),
        }
    }

    /// True once the capture has ended by itself (duration, target exit).
    pub fn is_finished(&self) -> bool {
        self.control.is_finished()
    }

    /// Sleeps until the capture has ended or `timeout` has passed, whichever
    /// comes first; true when it has ended. A caller that redraws a status
    /// now and then learns of the end at once rather than at its next poll.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let guard = match self.ended.done.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (done, _) = match self
            .ended
            .signal
            .wait_timeout_while(guard, timeout, |done| !*done)
        {
            Ok(r) => r,
            Err(poisoned) => poisoned.into_inner(),
        };
        *done || self.control.is_finished()
    }

    /// Stops now: detaches the probes, writes the last batch, closes the database.
    pub fn stop(self) -> Result<CaptureSummary, CaptureError> {
        self.stop_because(crate::stop::REQUESTED)
    }

    /// Stops now as [`CaptureHandle::stop`] does, recording `reason` as
    /// the file's `stop_reason` (unless the capture was already stopping
    /// for another).
    pub fn stop_because(self, reason: &str) -> Result<CaptureSummary, CaptureError> {
        self.shared.stop.request(reason);
        self.wait()
    }

    /// Waits until the capture ends by itself (duration elapsed, traced
    /// command exited) or through a [`StopHandle`].
    pub fn wait(self) -> Result<CaptureSummary, CaptureError> {
        self.control
            .join()
            .map_err(|_| CaptureError::Internal("control thread panicked".into()))?
    }
}

/// A launched command not yet released: killed if the start fails.
struct HeldUntilReady(Option<HeldChild>);

impl Drop for HeldUntilReady {
    fn drop(&mut self) {
        if let Some(c) = self.0.take() {
            kill(c);
        }
    }
}

fn kill(child: HeldChild) {
    let pid = child.pid();
    // SAFETY: signalling our own, never-released child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    child.detach();
}

/// Starts a capture in background threads and returns once every probe is
/// attached (a launched command is released only then).
pub fn start(config: CaptureConfig) -> Result<CaptureHandle, CaptureError> {
    let timer = crate::phase_timer::PhaseTimer::start("capture start");
    preflight::require_capture_ready()?;
    timer.mark("preflight");
    match &config.target {
        Target::Pid(p) if !procs::exists(*p) => return Err(CaptureError::NoSuchProcess(*p)),
        Target::Command(argv) if argv.is_empty() => return Err(CaptureError::EmptyCommand),
        _ => {}
    }
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as u64;
    if !config.ring_bytes.is_power_of_two() || u64::from(config.ring_bytes) < page {
        return Err(CaptureError::BadRingSize(config.ring_bytes.into()));
    }
    let trace_all = config.target == Target::AllProcesses;
    let clock = Clock::measure();
    let db_prep = crate::db_prep::DbPrep::start(&config.db)?;
    let mut probes = Probes::load(LoadOptions {
        trace_all,
        self_tgid: std::process::id(),
        ring_bytes: config.ring_bytes,
        multi_uprobes: config.multi_uprobes,
        offcpu_stacks: config.stack_hz > 0 && config.offcpu_stacks,
        launch_sample: config.launch_sample,
        launch_rows: config.launch_rows,
    })?;
    timer.mark("programs loaded and verified");
    let mut tracked = probes.take_tracked()?;
    let losses = probes.take_losses()?;
    let open_calls = probes.take_open_calls()?;
    let page_runs = probes.take_page_runs()?;
    let launch_levels = probes.take_launch_levels()?;
    let ring = probes.take_ring()?;

    // The launched command waits at the gate until the filter knows it; it
    // exists from here on (its pid scopes the probes), and any error before
    // it is released kills it.
    let mut held = HeldUntilReady(match &config.target {
        Target::Command(argv) => Some(spawn_held(argv)?),
        _ => None,
    });
    let scan: Vec<i32> = match &config.target {
        Target::Pid(p) => procs::tree(*p),
        Target::Command(_) => Vec::new(),
        Target::AllProcesses => procs::all_pids(),
    };
    // Probes live in the traced processes only, so no other process on the
    // host traps on them; a process the tree starts later gets its own when
    // it maps code (see control.rs). Every process when all are traced.
    let scopes: Vec<Option<i32>> = if trace_all {
        vec![None]
    } else {
        scan.iter()
            .copied()
            .chain(held.0.as_ref().map(HeldChild::pid))
            .map(Some)
            .collect()
    };
    for lib in &config.libraries {
        for scope in &scopes {
            probes.attach_library(lib, *scope)?;
        }
    }
    let mut candidates = discovery::well_known_libraries();
    for pid in &scan {
        candidates.extend(discovery::libraries_in_maps(*pid));
    }
    let warnings = probes.warnings();
    let skew = crate::clock::injected_skew_ns();
    if skew != 0 {
        warnings.record(
            crate::status::WarningKind::ClockSkewInjected,
            None,
            format!(
                "{} = {skew}: every time in this capture is shifted by {skew} ns",
                crate::clock::SKEW_ENV
            ),
        );
    }
    let mut failed_libs = HashSet::new();
    for lib in candidates {
        for scope in &scopes {
            if let Err(e) = probes.attach_library(&lib, *scope) {
                warnings.library_not_probed(&lib, &e);
                failed_libs.insert(lib.clone());
                break;
            }
        }
    }
    if config.require_cuda_library && probes.libraries().is_empty() {
        return Err(CaptureError::NoCudaLibrary {
            searched: discovery::searched_description(),
        });
    }
    timer.mark("libraries probed");
    probes.attach_tracepoints()?;
    timer.mark("tracepoints attached");
    let stack_status = Arc::new(Mutex::new(StackStatus {
        hz: config.stack_hz,
        ..StackStatus::default()
    }));
    if config.stack_hz > 0 {
        match probes.attach_stack_sampler(config.stack_hz) {
            Ok(cpus) => {
                if let Ok(mut s) = stack_status.lock() {
                    s.cpus = cpus as u32;
                }
            }
            Err(e) => warnings.record(
                crate::status::WarningKind::StackSamplingUnavailable,
                None,
                format!("on-CPU stack sampling could not start ({e}); no on-CPU stacks"),
            ),
        }
        timer.mark("stack sampler attached");
    }
    let mut info = sysinfo::session_info();
    info.started_ns = clock.now_epoch();
    let started_ns = info.started_ns;
    if let Target::Command(argv) = &config.target {
        info.command = argv.join(" ");
    }
    if let Target::Pid(p) = &config.target {
        info.target_pids = vec![*p];
    }
    let mut child = held.0.take();
    if let Some(c) = &child {
        info.target_pids = vec![c.pid()];
    }
    timer.mark("session facts read");
    let setup = (|| -> Result<_, CaptureError> {
        let mut tw = db_prep.finish()?.start_session(&info, config.raw)?;
        // Both keep every timed launch of at least the threshold as a row
        // and stand the shorter rows for the other launches.
        if config.folds_launches() || config.launch_sample > 1 {
            tw.set_meta(
                ingero_store::schema::META_LAUNCH_ROW_KEEP_NS,
                &ingero_store::schema::LAUNCH_ROW_KEEP_NS.to_string(),
            )?;
        }
        match (&child, &config.target) {
            (Some(c), _) => tracked.insert(c.pid())?,
            (None, Target::Pid(_)) => {
                for pid in &scan {
                    tracked.insert(*pid)?;
                }
            }
            _ => {}
        }
        Ok(tw)
    })();
    let tw = match setup {
        Ok(tw) => tw,
        Err(e) => {
            if let Some(c) = child.take() {
                kill(c);
            }
            return Err(e);
        }
    };

    let traced = Arc::new(if trace_all {
        TracedPids::everything()
    } else {
        TracedPids::tree(scan.iter().copied().chain(child.as_ref().map(|c| c.pid())))
    });
    let gpu_status = Arc::new(Mutex::new(GpuSamplerStatus::default()));
    let stats = Arc::new(Mutex::new(LiveStats::default()));
    let written = Arc::new(AtomicU64::new(0));
    let writer_failure = Arc::new(WriterFailure::default());
    let shared = Arc::new(Shared {
        started: Instant::now(),
        state: Mutex::new(CaptureState::Running),
        stats: stats.clone(),
        written: written.clone(),
        libraries: Mutex::new(
            probes
                .libraries()
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        ),
        db: config.db.clone(),
        error: Mutex::new(None),
        stop: StopRequest::default(),
        writer_failure: writer_failure.clone(),
        warnings,
        gpu: gpu_status.clone(),
        traced: traced.clone(),
        stacks: stack_status.clone(),
        launch_levels: Mutex::new(LaunchLevelStatus {
            both_kept: !config.one_launch_level,
            ..Default::default()
        }),
    });
    let (wtx, wrx) = sync_channel(WRITER_QUEUE);
    let (ntx, nrx) = sync_channel(NOTICE_QUEUE);
    let io = |e: std::io::Error| CaptureError::Internal(format!("cannot start a thread: {e}"));
    let writer_thread =
        writer::spawn(tw, wrx, written, stats.clone(), writer_failure).map_err(io)?;
    for pid in &scan {
        if !trace_all {
            if let Some(p) = procs::process_info(*pid, started_ns) {
                let _ = wtx.send(writer::WriterMsg::Process(p));
                if let Some(place) = procs::job_place(*pid) {
                    let _ = wtx.send(writer::WriterMsg::Place(*pid, place));
                }
            }
        }
    }
    let stacks_on = config.stack_hz > 0;
    let (stack_route, symbolizer) = if stacks_on {
        let (stx, srx) = sync_channel(STACK_QUEUE);
        let thread = spawn_symbolizer(srx, wtx.clone(), stack_status.clone()).map_err(io)?;
        (Some(StackRoute::new(stx)), Some(thread))
    } else {
        (None, None)
    };
    let python_stop = Arc::new(AtomicBool::new(false));
    let live_pids = Arc::new(LivePids::default());
    for pid in scan.iter().copied().chain(child.as_ref().map(|c| c.pid())) {
        if !trace_all {
            live_pids.insert(pid);
        }
    }
    let python = if stacks_on && config.python_stacks {
        let links = PythonLinks {
            clock,
            writer: wtx.clone(),
            pids: live_pids.clone(),
            status: stack_status.clone(),
            stop: python_stop.clone(),
        };
        Some(py_sampler::spawn(config.stack_hz, links).map_err(io)?)
    } else {
        None
    };
    let poller_stop = Arc::new(AtomicBool::new(false));
    let poller = poller::spawn(
        ring,
        clock,
        PollerConfig {
            poll_interval: config.poll_interval,
            batch_interval: config.batch_interval,
        },
        wtx.clone(),
        ntx,
        stats,
        poller_stop.clone(),
        stack_route,
    )
    .map_err(io)?;
    timer.mark("database, writer and samplers started");
    let gpu_sampler = if config.nvml {
        let links = SamplerLinks {
            clock,
            started_ns,
            writer: wtx.clone(),
            warnings: shared.warnings.clone(),
            pids: traced,
            status: gpu_status,
        };
        let cfg = SamplerConfig {
            library: config.nvml_library.clone(),
            status_interval: config.gpu_status_interval,
            buffer_interval: config.gpu_buffer_interval,
        };
        Some(gpu_sampler::spawn(cfg, links).map_err(io)?)
    } else {
        None
    };
    let root = match (&child, &config.target) {
        (Some(c), _) => Some(c.pid()),
        (None, Target::Pid(p)) => Some(*p),
        _ => None,
    };
    timer.mark("GPU sampler started");
    if let Some(c) = child.as_mut() {
        c.release();
    }
    timer.mark("command released");
    let control = Control {
        probes: Some(probes),
        losses,
        open_calls,
        page_runs,
        launch_levels,
        launch_level: if config.one_launch_level {
            crate::launch_level::LaunchLevelState::Both {
                base: Default::default(),
            }
        } else {
            crate::launch_level::LaunchLevelState::Kept
        },
        writer: wtx,
        writer_thread: Some(writer_thread),
        notices: nrx,
        poller: Some(poller),
        poller_stop,
        gpu_sampler,
        shared: shared.clone(),
        child,
        root,
        trace_all,
        deadline: config.duration.map(|d| Instant::now() + d),
        duration: config.duration,
        clock,
        started_ns,
        failed_libs,
        symbolizer,
        python,
        python_stop,
        live_pids: (stacks_on && config.python_stacks).then_some(live_pids),
        stack_hz: config.stack_hz,
        offcpu_stacks: config.offcpu_stacks,
    };
    let ended = Arc::new(Ended::default());
    let on_end = EndedOnDrop(ended.clone());
    let control = std::thread::Builder::new()
        .name("ingero-control".into())
        .spawn(move || {
            let _on_end = on_end;
            control.run()
        })
        .map_err(io)?;
    Ok(CaptureHandle {
        shared,
        control,
        ended,
    })
}
