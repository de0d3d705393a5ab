//! The control thread: owns the loaded probes. It attaches newly found CUDA
//! libraries ([`libraries`]), records processes ([`notices`]), samples the
//! system and the loss counters once a second ([`losses`]), settles the
//! launch levels ([`launch_levels`]), and runs the shutdown sequence
//! ([`shutdown`]).

mod launch_levels;
mod libraries;
mod losses;
mod notices;
mod shutdown;
mod stack_sources;

use crate::clock::Clock;
use crate::launch::HeldChild;
use crate::launch_level::{LaunchLevelState, LaunchLevels};
use crate::loader::{LossCounters, Probes};
use crate::nvml::sampler::GpuSampler;
use crate::open_calls::OpenCalls;
use crate::page_runs::OpenPageRuns;
use crate::poller::Notice;
use crate::procs;
use crate::shared::Shared;
use crate::stacks::python::LivePids;
use crate::status::{CaptureSummary, StopReason};
use crate::sysinfo::Sampler;
use crate::writer::{WriterMsg, WriterReport};
use crate::CaptureError;
use losses::Recorded;
use notices::SeenProcesses;
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The kernel tables user space reads while the capture runs and at its
/// stop (the ring buffer is the poller's).
pub struct KernelTables {
    /// Kernel loss counters.
    pub losses: LossCounters,
    /// Kernel table of calls in flight, read at stop.
    pub open_calls: OpenCalls,
    /// Page-allocation runs the kernel has not sent yet, read at stop.
    pub page_runs: OpenPageRuns,
    /// Kernel counters of launches by level.
    pub launch_levels: LaunchLevels,
}

/// The capture's other threads and the channels to them: the control
/// thread feeds the writer, hears the poller, and ends them all, in order,
/// at the stop.
pub struct CaptureThreads {
    /// To the writer.
    pub writer: SyncSender<WriterMsg>,
    /// Writer thread.
    pub writer_thread: Option<JoinHandle<WriterReport>>,
    /// From the poller.
    pub notices: Receiver<Notice>,
    /// Poller thread.
    pub poller: Option<JoinHandle<()>>,
    /// Tells the poller to drain once more and end.
    pub poller_stop: Arc<AtomicBool>,
    /// NVML sampler thread, when sampling is on.
    pub gpu_sampler: Option<GpuSampler>,
    /// Stack symboliser thread (ends after the poller).
    pub symbolizer: Option<JoinHandle<()>>,
    /// Python stack sampler thread.
    pub python: Option<JoinHandle<()>>,
    /// Tells the Python sampler to end.
    pub python_stop: Arc<AtomicBool>,
    /// Processes the Python sampler looks at, when it runs.
    pub live_pids: Option<Arc<LivePids>>,
}

/// Everything the control thread owns.
pub struct Control {
    /// Loaded programs (dropping them detaches every probe).
    pub probes: Option<Probes>,
    /// Kernel tables read while running and at the stop.
    pub tables: KernelTables,
    /// Whether the runtime launch probes are still attached.
    pub launch_level: LaunchLevelState,
    /// The other threads of the capture.
    pub threads: CaptureThreads,
    /// Shared with the handle.
    pub shared: Arc<Shared>,
    /// Launched command, if any.
    pub child: Option<HeldChild>,
    /// Process whose exit ends the capture (pid targets).
    pub root: Option<i32>,
    /// Whether every process is traced.
    pub trace_all: bool,
    /// Stop after this instant.
    pub deadline: Option<Instant>,
    /// The capture's configured length (what the ending says).
    pub duration: Option<Duration>,
    /// Kernel to epoch time.
    pub clock: Clock,
    /// Session start, epoch ns.
    pub started_ns: i64,
    /// Libraries that could not be probed (not retried).
    pub failed_libs: HashSet<PathBuf>,
    /// On-CPU stack sampling rate (0 = off).
    pub stack_hz: u32,
    /// Whether off-CPU stacks of CUDA threads were asked for.
    pub offcpu_stacks: bool,
}

const TICK: Duration = Duration::from_millis(20);
const SECOND: Duration = Duration::from_secs(1);

impl Control {
    /// Runs until stopped, then drains, finishes the database and reports.
    pub fn run(mut self) -> Result<CaptureSummary, CaptureError> {
        let mut sampler = Sampler::default();
        let _ = sampler.sample(self.clock.now_epoch());
        let mut last_losses = Recorded::default();
        let mut seen = SeenProcesses::default();
        let mut next_second = Instant::now() + SECOND;
        let mut command_exit = None;
        let reason = loop {
            while let Ok(n) = self.threads.notices.try_recv() {
                self.on_notice(n, &mut seen);
            }
            let now = Instant::now();
            for pid in seen.due_rescans(now) {
                self.attach_from_maps(pid);
            }
            // Every tick until settled: the sooner the runtime level goes,
            // the fewer launches pay for both.
            self.settle_launch_level();
            if now >= next_second {
                next_second = now + SECOND;
                last_losses = self.once_a_second(&mut sampler, last_losses);
            }
            if let Some(reason) = self.stop_reason(now, &mut command_exit) {
                break reason;
            }
            std::thread::sleep(TICK);
        };
        self.shutdown(reason, command_exit, last_losses, seen, sampler)
    }

    /// The once-a-second work: a system snapshot, the losses since the
    /// last second, and (pid targets) a look for libraries the traced
    /// process mapped without the loader watch seeing it.
    fn once_a_second(&mut self, sampler: &mut Sampler, last_losses: Recorded) -> Recorded {
        self.send(WriterMsg::Snapshot(sampler.sample(self.clock.now_epoch())));
        let recorded = self.record_losses(last_losses, self.clock.now_epoch());
        if let (Some(root), false) = (self.root, self.trace_all) {
            if self.child.is_none() {
                self.attach_from_maps(root);
            }
        }
        recorded
    }

    /// Why the capture should end now, if it should: a writer failure, a
    /// stop request, the duration, or the end of the traced command or
    /// process (whose exit status goes to `command_exit`).
    fn stop_reason(&mut self, now: Instant, command_exit: &mut Option<i32>) -> Option<StopReason> {
        if self.shared.writer_failure.is_set() {
            return Some(StopReason::WriterFailed);
        }
        if self.shared.stop.requested() {
            return Some(StopReason::Requested);
        }
        if self.deadline.is_some_and(|d| now >= d) {
            return Some(StopReason::Duration);
        }
        if let Some(child) = self.child.as_mut() {
            if let Some(code) = child.try_wait() {
                *command_exit = Some(code);
                return Some(StopReason::TargetExited);
            }
        } else if let Some(root) = self.root {
            if !procs::exists(root) {
                return Some(StopReason::TargetExited);
            }
        }
        None
    }

    /// Hands `msg` to the writer (gone only once the writer has failed,
    /// which the stop reports).
    fn send(&self, msg: WriterMsg) {
        let _ = self.threads.writer.send(msg);
    }
}
