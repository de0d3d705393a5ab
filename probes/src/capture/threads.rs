//! The second half of a capture's start: the threads that carry the
//! records (writer, poller, stack symboliser and samplers, GPU sampler),
//! the release of a launched command, and the control thread that owns
//! the whole until the stop.

use super::attach::Attached;
use super::handle::CaptureHandle;
use crate::clock::Clock;
use crate::config::{CaptureConfig, Target};
use crate::control::{CaptureThreads, Control};
use crate::error::CaptureError;
use crate::launch::HeldChild;
use crate::launch_level::LaunchLevelState;
use crate::loader::Probes;
use crate::nvml::sampler::{self as gpu_sampler, GpuSampler, SamplerConfig, SamplerLinks};
use crate::nvml::TracedPids;
use crate::phase_timer::PhaseTimer;
use crate::poller::{self, PollerConfig, StackRoute};
use crate::procs;
use crate::shared::Shared;
use crate::stacks::python::{self as py_sampler, LivePids, PythonLinks};
use crate::stacks::spawn_symbolizer;
use crate::status::{CaptureState, LaunchLevelStatus, StackStatus};
use crate::stop::StopRequest;
use crate::writer::{self, WriterMsg};
use aya::maps::{MapData, RingBuf};
use ingero_store::TraceWriter;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// Batches the writer may have queued (each at most 32k events).
const WRITER_QUEUE: usize = 16;
/// Lifecycle notices the control thread may have queued.
const NOTICE_QUEUE: usize = 65_536;
/// Batches of raw stacks the symboliser may have queued.
const STACK_QUEUE: usize = 256;

/// Runs the second half of the start.
pub(super) fn start_threads(
    config: &CaptureConfig,
    attached: Attached,
    timer: &PhaseTimer,
) -> Result<CaptureHandle, CaptureError> {
    let Attached {
        probes,
        tables,
        ring,
        mut child,
        scan,
        failed_libs,
        stack_status,
        session,
        clock,
        started_ns,
        trace_all,
    } = attached;
    let child_pid = child.as_ref().map(HeldChild::pid);
    let followed: Option<Vec<i32>> =
        (!trace_all).then(|| scan.iter().copied().chain(child_pid).collect());
    let traced = Arc::new(match &followed {
        Some(pids) => TracedPids::tree(pids.iter().copied()),
        None => TracedPids::everything(),
    });
    let shared = Arc::new(shared_state(config, &probes, traced, stack_status));
    let inputs = WorkerInputs {
        session,
        ring,
        clock,
        started_ns,
        scan,
        followed,
    };
    let threads = start_workers(config, inputs, &shared, timer)?;
    let root = child_pid.or(match config.target {
        Target::Pid(p) => Some(p),
        _ => None,
    });
    if let Some(c) = child.as_mut() {
        c.release();
    }
    timer.mark("command released");
    let control = Control {
        probes: Some(probes),
        tables,
        launch_level: first_launch_level(config),
        threads,
        shared: shared.clone(),
        child,
        root,
        trace_all,
        deadline: config.duration.map(|d| Instant::now() + d),
        duration: config.duration,
        clock,
        started_ns,
        failed_libs,
        stack_hz: config.stack_hz,
        offcpu_stacks: config.offcpu_stacks,
    };
    CaptureHandle::spawn(control, shared).map_err(thread_not_started)
}

/// What the worker threads start from.
struct WorkerInputs {
    /// The open session, for the writer.
    session: TraceWriter,
    /// The ring buffer, for the poller.
    ring: RingBuf<MapData>,
    /// Kernel to epoch time.
    clock: Clock,
    /// Session start, epoch ns.
    started_ns: i64,
    /// Processes found at the start (a pid target's tree, or every process).
    scan: Vec<i32>,
    /// Processes followed from the start; `None` when every process is.
    followed: Option<Vec<i32>>,
}

/// Starts the threads that carry the records, in the order each needs the
/// one before: the writer, the stack threads, the poller, the GPU sampler.
fn start_workers(
    config: &CaptureConfig,
    inputs: WorkerInputs,
    shared: &Shared,
    timer: &PhaseTimer,
) -> Result<CaptureThreads, CaptureError> {
    let clock = inputs.clock;
    let (writer, writer_rx) = sync_channel(WRITER_QUEUE);
    let (notices, notices_rx) = sync_channel(NOTICE_QUEUE);
    let writer_thread = writer::spawn(
        inputs.session,
        writer_rx,
        shared.written.clone(),
        shared.stats.clone(),
        shared.writer_failure.clone(),
    )
    .map_err(thread_not_started)?;
    if inputs.followed.is_some() {
        record_processes_at_start(&writer, &inputs.scan, inputs.started_ns);
    }
    let stacks = start_stack_threads(config, clock, &writer, shared, inputs.followed)?;
    let poller_stop = Arc::new(AtomicBool::new(false));
    let poller_config = PollerConfig {
        poll_interval: config.poll_interval,
        batch_interval: config.batch_interval,
    };
    let poller = poller::spawn(
        inputs.ring,
        clock,
        poller_config,
        writer.clone(),
        notices,
        shared.stats.clone(),
        poller_stop.clone(),
        stacks.route,
    )
    .map_err(thread_not_started)?;
    timer.mark("database, writer and samplers started");
    let gpu_sampler = start_gpu_sampler(config, clock, inputs.started_ns, &writer, shared)?;
    timer.mark("GPU sampler started");
    Ok(CaptureThreads {
        writer,
        writer_thread: Some(writer_thread),
        notices: notices_rx,
        poller: Some(poller),
        poller_stop,
        gpu_sampler,
        symbolizer: stacks.symbolizer,
        python: stacks.python,
        python_stop: stacks.python_stop,
        live_pids: stacks.live_pids,
    })
}

/// A thread the capture needs could not be started.
fn thread_not_started(e: std::io::Error) -> CaptureError {
    CaptureError::Internal(format!("cannot start a thread: {e}"))
}

/// The state the handle and the threads share, fresh for a capture that
/// is running.
fn shared_state(
    config: &CaptureConfig,
    probes: &Probes,
    traced: Arc<TracedPids>,
    stack_status: Arc<Mutex<StackStatus>>,
) -> Shared {
    Shared {
        started: Instant::now(),
        state: Mutex::new(CaptureState::Running),
        stats: Default::default(),
        written: Default::default(),
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
        writer_failure: Default::default(),
        warnings: probes.warnings(),
        gpu: Default::default(),
        traced,
        stacks: stack_status,
        launch_levels: Mutex::new(LaunchLevelStatus {
            both_kept: !config.one_launch_level,
            ..Default::default()
        }),
    }
}

/// Records the processes of a pid target's tree as they are at the start
/// (the poller records the others as they appear).
fn record_processes_at_start(writer: &SyncSender<WriterMsg>, scan: &[i32], started_ns: i64) {
    for pid in scan {
        if let Some(p) = procs::process_info(*pid, started_ns) {
            let _ = writer.send(WriterMsg::Process(p));
            if let Some(place) = procs::job_place(*pid) {
                let _ = writer.send(WriterMsg::Place(*pid, place));
            }
        }
    }
}

/// The stack threads of a capture, and what the poller and the control
/// thread keep of them.
struct StackThreads {
    /// The poller's way to the symboliser, when stacks are sampled.
    route: Option<StackRoute>,
    /// The symboliser thread.
    symbolizer: Option<JoinHandle<()>>,
    /// The Python sampler thread.
    python: Option<JoinHandle<()>>,
    /// Tells the Python sampler to end.
    python_stop: Arc<AtomicBool>,
    /// Processes the Python sampler looks at, when it runs.
    live_pids: Option<Arc<LivePids>>,
}

/// Starts the symboliser and the Python sampler when stacks are asked
/// for; `followed` is the processes the Python sampler starts with
/// (`None` when every process is traced: it follows those the poller
/// reports).
fn start_stack_threads(
    config: &CaptureConfig,
    clock: Clock,
    writer: &SyncSender<WriterMsg>,
    shared: &Shared,
    followed: Option<Vec<i32>>,
) -> Result<StackThreads, CaptureError> {
    let stacks_on = config.stack_hz > 0;
    let (route, symbolizer) = if stacks_on {
        let (stx, srx) = sync_channel(STACK_QUEUE);
        let thread = spawn_symbolizer(srx, writer.clone(), shared.stacks.clone())
            .map_err(thread_not_started)?;
        (Some(StackRoute::new(stx)), Some(thread))
    } else {
        (None, None)
    };
    let python_stop = Arc::new(AtomicBool::new(false));
    let live_pids = Arc::new(LivePids::default());
    for pid in followed.into_iter().flatten() {
        live_pids.insert(pid);
    }
    let python_on = stacks_on && config.python_stacks;
    let python = if python_on {
        let links = PythonLinks {
            clock,
            writer: writer.clone(),
            pids: live_pids.clone(),
            status: shared.stacks.clone(),
            stop: python_stop.clone(),
        };
        Some(py_sampler::spawn(config.stack_hz, links).map_err(thread_not_started)?)
    } else {
        None
    };
    Ok(StackThreads {
        route,
        symbolizer,
        python,
        python_stop,
        live_pids: python_on.then_some(live_pids),
    })
}

/// Starts the NVML sampler when GPU sampling is on.
fn start_gpu_sampler(
    config: &CaptureConfig,
    clock: Clock,
    started_ns: i64,
    writer: &SyncSender<WriterMsg>,
    shared: &Shared,
) -> Result<Option<GpuSampler>, CaptureError> {
    if !config.nvml {
        return Ok(None);
    }
    let links = SamplerLinks {
        clock,
        started_ns,
        writer: writer.clone(),
        warnings: shared.warnings.clone(),
        pids: shared.traced.clone(),
        status: shared.gpu.clone(),
    };
    let cfg = SamplerConfig {
        library: config.nvml_library.clone(),
        status_interval: config.gpu_status_interval,
        buffer_interval: config.gpu_buffer_interval,
    };
    gpu_sampler::spawn(cfg, links)
        .map(Some)
        .map_err(thread_not_started)
}

/// Where the launch levels start: both probed and counting when one level
/// may go, kept for good otherwise (`--all-launch-levels`).
fn first_launch_level(config: &CaptureConfig) -> LaunchLevelState {
    if config.one_launch_level {
        LaunchLevelState::Both {
            base: Default::default(),
        }
    } else {
        LaunchLevelState::Kept
    }
}
