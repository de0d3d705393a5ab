//! The control thread: owns the loaded probes. It attaches newly found CUDA
//! libraries, records processes, samples the system and the loss counters
//! once a second, and runs the shutdown sequence.

use crate::clock::Clock;
use crate::discovery;
use crate::launch::HeldChild;
use crate::launch_level::{LaunchLevelState, LaunchLevels, RUNTIME_LAUNCH_OPS};
use crate::loader::{AttachOutcome, LossCounters, Probes};
use crate::nvml::sampler::GpuSampler;
use crate::open_calls::OpenCalls;
use crate::poller::Notice;
use crate::procs;
use crate::shared::Shared;
use crate::stacks::python::LivePids;
use crate::status::{CaptureState, CaptureSummary, LossBreakdown, StopReason};
use crate::sysinfo::Sampler;
use crate::writer::{WriterMsg, WriterReport};
use crate::CaptureError;
use ingero_store::catalog::loss_source;
use ingero_store::StackKind;
use ingero_store::{Event, ProcessInfo};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Everything the control thread owns.
pub struct Control {
    /// Loaded programs (dropping them detaches every probe).
    pub probes: Option<Probes>,
    /// Kernel loss counters.
    pub losses: LossCounters,
    /// Kernel table of calls in flight, read at stop.
    pub open_calls: OpenCalls,
    /// Page-allocation runs the kernel has not sent yet, read at stop.
    pub page_runs: crate::page_runs::OpenPageRuns,
    /// Kernel counters of launches by level.
    pub launch_levels: LaunchLevels,
    /// Whether the runtime launch probes are still attached.
    pub launch_level: LaunchLevelState,
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
    /// Libraries that could not be probed at the start (not retried).
    pub failed_libs: HashSet<PathBuf>,
    /// Stack symboliser thread (ends after the poller).
    pub symbolizer: Option<JoinHandle<()>>,
    /// Python stack sampler thread.
    pub python: Option<JoinHandle<()>>,
    /// Tells the Python sampler to end.
    pub python_stop: Arc<AtomicBool>,
    /// Processes the Python sampler looks at, when it runs.
    pub live_pids: Option<Arc<LivePids>>,
    /// On-CPU stack sampling rate (0 = off).
    pub stack_hz: u32,
    /// Whether off-CPU stacks of CUDA threads were asked for.
    pub offcpu_stacks: bool,
}

/// Loss counters as last written to the database.
#[derive(Debug, Clone, Copy, Default)]
struct Recorded {
    losses: LossBreakdown,
    unfinished: u64,
}

const TICK: Duration = Duration::from_millis(20);
const SECOND: Duration = Duration::from_secs(1);
/// How long runtime launches in flight may keep their return probe once
/// the entry side is gone; a launch blocked longer keeps it for good.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

impl Control {
    /// Runs until stopped, then drains, finishes the database and reports.
    pub fn run(mut self) -> Result<CaptureSummary, CaptureError> {
        let mut sampler = Sampler::default();
        let _ = sampler.sample(self.clock.now_epoch());
        let mut last_losses = Recorded::default();
        let mut known: HashSet<i32> = HashSet::new();
        let mut exited: HashSet<i32> = HashSet::new();
        let mut rescans: BTreeMap<i32, Instant> = BTreeMap::new();
        let mut failed_libs = std::mem::take(&mut self.failed_libs);
        let mut next_second = Instant::now() + SECOND;
        let mut command_exit = None;
        let reason = loop {
            while let Ok(n) = self.notices.try_recv() {
                self.on_notice(n, &mut known, &mut exited, &mut rescans);
            }
            let now = Instant::now();
            let due: Vec<i32> = rescans
                .iter()
                .filter(|(_, t)| **t <= now)
                .map(|(p, _)| *p)
                .collect();
            for pid in due {
                rescans.remove(&pid);
                self.attach_from_maps(pid, &mut failed_libs);
            }
            // Every tick until settled: the sooner the runtime level goes,
            // the fewer launches pay for both.
            self.settle_launch_level();
            if now >= next_second {
                next_second = now + SECOND;
                self.send(WriterMsg::Snapshot(sampler.sample(self.clock.now_epoch())));
                last_losses = self.record_losses(last_losses, self.clock.now_epoch());
                if let (Some(root), false) = (self.root, self.trace_all) {
                    if self.child.is_none() {
                        self.attach_from_maps(root, &mut failed_libs);
                    }
                }
            }
            if self.shared.writer_failure.is_set() {
                break StopReason::WriterFailed;
            }
            if self.shared.stop.requested() {
                break StopReason::Requested;
            }
            if self.deadline.is_some_and(|d| now >= d) {
                break StopReason::Duration;
            }
            if let Some(child) = self.child.as_mut() {
                if let Some(code) = child.try_wait() {
                    command_exit = Some(code);
                    break StopReason::TargetExited;
                }
            } else if let Some(root) = self.root {
                if !procs::exists(root) {
                    break StopReason::TargetExited;
                }
            }
            std::thread::sleep(TICK);
        };
        self.shutdown(reason, command_exit, last_losses, known, exited, sampler)
    }

    /// At every tick: detaches the runtime launch probes when the driver
    /// level sees every launch (see [`crate::launch_level`]). Until the
    /// traced processes map the runtime there is nothing to decide, and a
    /// process that maps it after the decision gets its own count.
    fn settle_launch_level(&mut self) {
        let Some(probes) = self.probes.as_mut() else {
            return;
        };
        self.launch_level = match self.launch_level {
            LaunchLevelState::Both { base } => {
                if probes.has_runtime_launch_entries()
                    && self
                        .launch_levels
                        .read()
                        .since(base)
                        .runtime_level_redundant()
                {
                    probes.detach_runtime_launch_entries();
                    LaunchLevelState::Draining {
                        since: Instant::now(),
                        since_ns: self.clock.now_epoch(),
                    }
                } else {
                    LaunchLevelState::Both { base }
                }
            }
            LaunchLevelState::Draining { since, since_ns } => {
                // Entries linked since the decision (a process that mapped
                // the runtime meanwhile) go the same way.
                probes.detach_runtime_launch_entries();
                if !self.open_calls.any_open(&RUNTIME_LAUNCH_OPS) {
                    probes.detach_runtime_launch_returns();
                    let c = self.launch_levels.read();
                    tracing::info!(
                        runtime_launches = c.runtime,
                        nested_driver_launches = c.nested_driver,
                        "every runtime launch reached cuLaunchKernel: launches are probed at the driver only from now on"
                    );
                    self.note_runtime_level_gone(since_ns, c.runtime);
                    LaunchLevelState::DriverOnly
                } else if since.elapsed() >= DRAIN_LIMIT {
                    // A launch blocked this long: leave its return probe in
                    // place (no runtime launch is recorded any more).
                    self.note_runtime_level_gone(since_ns, self.launch_levels.read().runtime);
                    LaunchLevelState::Kept
                } else {
                    LaunchLevelState::Draining { since, since_ns }
                }
            }
            LaunchLevelState::DriverOnly if probes.has_runtime_launch_entries() => {
                let base = self.launch_levels.read();
                self.send(WriterMsg::LaunchLevel {
                    ts_ns: self.clock.now_epoch(),
                    runtime_probed: true,
                    runtime_launches: base.runtime as i64,
                });
                LaunchLevelState::Both { base }
            }
            s => s,
        };
    }

    /// Records in the status and the database that the runtime launch
    /// probes' entries went at `at_ns` (epoch) after `probed` runtime
    /// launches: the runtime launch functions' counts stop there.
    fn note_runtime_level_gone(&self, at_ns: i64, probed: u64) {
        self.send(WriterMsg::LaunchLevel {
            ts_ns: at_ns,
            runtime_probed: false,
            runtime_launches: probed as i64,
        });
        if let Ok(mut l) = self.shared.launch_levels.lock() {
            l.runtime_detached += 1;
            l.runtime_launches_probed = probed;
            l.last_detached_ms = Some((at_ns - self.started_ns).max(0) as u64 / 1_000_000);
        }
    }

    fn send(&self, msg: WriterMsg) {
        let _ = self.writer.send(msg);
    }

    fn on_notice(
        &mut self,
        n: Notice,
        known: &mut HashSet<i32>,
        exited: &mut HashSet<i32>,
        rescans: &mut BTreeMap<i32, Instant>,
    ) {
        match n {
            Notice::Seen { pid, ts_ns } => {
                known.insert(pid);
                if let Some(l) = &self.live_pids {
                    l.insert(pid);
                }
                self.shared.traced.insert(pid);
                let info = procs::process_info(pid, ts_ns).unwrap_or(ProcessInfo {
                    pid,
                    first_seen_ns: ts_ns,
                    last_seen_ns: ts_ns,
                    ..ProcessInfo::default()
                });
                self.send(WriterMsg::Process(info));
                if let Some(place) = procs::job_place(pid) {
                    self.send(WriterMsg::Place(pid, place));
                }
            }
            Notice::Fork {
                parent,
                child,
                comm,
                ts_ns,
            } => {
                known.insert(child);
                self.shared.traced.insert(child);
                if let Some(l) = &self.live_pids {
                    l.insert(child);
                }
                self.send(WriterMsg::Process(ProcessInfo {
                    pid: child,
                    ppid: parent,
                    comm,
                    cmdline: procs::cmdline(child),
                    first_seen_ns: ts_ns,
                    last_seen_ns: ts_ns,
                }));
            }
            Notice::Exec { pid, comm, ts_ns } => {
                if let Some(l) = &self.live_pids {
                    l.exec(pid);
                }
                let ppid = procs::process_info(pid, ts_ns).map(|p| p.ppid).unwrap_or(0);
                self.send(WriterMsg::Process(ProcessInfo {
                    pid,
                    ppid,
                    comm,
                    cmdline: procs::cmdline(pid),
                    first_seen_ns: ts_ns,
                    last_seen_ns: ts_ns,
                }));
                if let Some(place) = procs::job_place(pid) {
                    self.send(WriterMsg::Place(pid, place));
                }
                rescans.insert(pid, Instant::now());
            }
            Notice::Exit { pid, ts_ns } => {
                exited.insert(pid);
                if let Some(l) = &self.live_pids {
                    l.remove(pid);
                }
                self.send(WriterMsg::Process(ProcessInfo {
                    pid,
                    first_seen_ns: ts_ns,
                    last_seen_ns: ts_ns,
                    ..ProcessInfo::default()
                }));
            }
            Notice::Rescan { pid } => {
                rescans.entry(pid).or_insert_with(Instant::now);
            }
        }
    }

    fn attach_from_maps(&mut self, pid: i32, failed: &mut HashSet<PathBuf>) {
        // The loader watch goes in before the map is read for libraries (a
        // second read): a library mapped before the link is in the map,
        // one mapped after it makes the loader trap.
        if let (Some(probes), Some(loader)) = (self.probes.as_mut(), discovery::loader_in_maps(pid))
        {
            let scope = (!self.trace_all).then_some(pid);
            if let Err(e) = probes.watch_loader(&loader, scope) {
                tracing::warn!(error = %e, pid, "no watch on libraries loaded from now on");
            }
        }
        for lib in discovery::libraries_in_maps(pid) {
            if failed.contains(&lib) {
                continue;
            }
            let Some(probes) = self.probes.as_mut() else {
                return;
            };
            let scope = (!self.trace_all).then_some(pid);
            match probes.attach_library(&lib, scope) {
                Ok(AttachOutcome::Attached(n)) => {
                    tracing::info!(library = %lib.display(), functions = n, pid, "probing CUDA library");
                    if let Ok(mut l) = self.shared.libraries.lock() {
                        let name = lib.display().to_string();
                        if !l.contains(&name) {
                            l.push(name);
                        }
                    }
                }
                Ok(AttachOutcome::AlreadyAttached) => {}
                Err(e) => {
                    self.shared.warnings.library_not_probed(&lib, &e);
                    failed.insert(lib);
                }
            }
        }
    }

    /// Writes what was lost since `last` into `capture_losses` (one row per
    /// cause, stamped `ts`) and refreshes the live counters from the kernel's.
    fn record_losses(&self, last: Recorded, ts: i64) -> Recorded {
        let kernel = self.losses.read();
        let user = match self.shared.stats.lock() {
            Ok(mut s) => {
                s.losses.ring_full = kernel.ring_full;
                s.losses.call_table_full = kernel.call_table_full;
                s.losses
            }
            Err(_) => LossBreakdown::default(),
        };
        let now = Recorded {
            losses: user,
            unfinished: kernel.unfinished,
        };
        let rows = [
            (
                loss_source::RINGBUF,
                now.losses.ring_full,
                last.losses.ring_full,
            ),
            (
                loss_source::CALL_TABLE,
                now.losses.call_table_full,
                last.losses.call_table_full,
            ),
            (
                loss_source::UNDECODABLE,
                now.losses.undecodable,
                last.losses.undecodable,
            ),
            (
                loss_source::NOTICE_QUEUE,
                now.losses.notices_dropped,
                last.losses.notices_dropped,
            ),
            (
                loss_source::UNFINISHED_CALL,
                now.unfinished,
                last.unfinished,
            ),
        ];
        for (source, total, before) in rows {
            let lost = total.saturating_sub(before);
            if lost > 0 {
                self.send(WriterMsg::Loss {
                    ts_ns: ts,
                    source,
                    lost: lost as i64,
                });
            }
        }
        now
    }

    /// Writes how each stack kind was sampled (`stack_sources`), with what
    /// the samplers counted.
    fn record_stack_sources(&self) {
        if self.stack_hz == 0 {
            return;
        }
        let s = self
            .shared
            .stacks
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        let ms = |ns: u64| ns as f64 / 1e6;
        self.send(WriterMsg::StackSource {
            kind: StackKind::OnCpu,
            hz: i64::from(self.stack_hz),
            note: format!(
                "CPU-clock perf event on {} CPUs; {} samples, {} user stacks not walkable; \
                 {} frames named, {} left as addresses; symboliser CPU {:.1} ms",
                s.cpus,
                s.on_cpu,
                s.user_unwalked,
                s.frames_resolved,
                s.frames_unresolved,
                ms(s.symbolize_cpu_ns)
            ),
        });
        if self.offcpu_stacks {
            self.send(WriterMsg::StackSource {
                kind: StackKind::OffCpu,
                hz: 0,
                note: format!(
                    "every switch-out of a CUDA-calling thread; {} samples",
                    s.off_cpu
                ),
            });
        }
        if self.live_pids.is_some() {
            let mut note = format!(
                "py-spy (non-blocking reads) on {} processes; {} samples, {} failed rounds; \
                 sampler CPU {:.1} ms",
                s.python_processes,
                s.python,
                s.python_errors,
                ms(s.python_cpu_ns)
            );
            if !s.python_note.is_empty() {
                note.push_str("; ");
                note.push_str(&s.python_note);
            }
            self.send(WriterMsg::StackSource {
                kind: StackKind::Python,
                hz: i64::from(self.stack_hz),
                note,
            });
        }
    }

    /// Records the calls still open once the probes are gone, and their
    /// count under `open_at_stop`.
    fn record_open_calls(&self, stopped_ns: i64) {
        let mut nccl = Vec::new();
        let calls: Vec<_> = self
            .open_calls
            .left_open(&self.clock, stopped_ns)
            .into_iter()
            .map(|c| {
                // An NCCL call left open (a rank stuck in a collective) keeps
                // its NCCL meaning, as a returned one does.
                if ingero_store::nccl::is_nccl_op(c.op_id) {
                    let (call, detail) = crate::nccl_record::split(&c);
                    nccl.push(detail);
                    call
                } else {
                    c
                }
            })
            .collect();
        if calls.is_empty() {
            return;
        }
        if !nccl.is_empty() {
            self.send(WriterMsg::Nccl(nccl));
        }
        if let Ok(mut s) = self.shared.stats.lock() {
            for c in &calls {
                s.add_cuda(c);
            }
        }
        self.send(WriterMsg::Loss {
            ts_ns: stopped_ns,
            source: loss_source::OPEN_AT_STOP,
            lost: calls.len() as i64,
        });
        self.send(WriterMsg::Events(
            calls.into_iter().map(Event::Cuda).collect(),
        ));
    }

    fn shutdown(
        mut self,
        reason: StopReason,
        mut command_exit: Option<i32>,
        last_losses: Recorded,
        mut known: HashSet<i32>,
        mut exited: HashSet<i32>,
        mut sampler: Sampler,
    ) -> Result<CaptureSummary, CaptureError> {
        self.shared.set_state(CaptureState::Stopping);
        let timer = crate::phase_timer::PhaseTimer::start("capture stop");
        let stopped_ns = self.clock.now_epoch();
        // The GPU sampler drains the driver buffers up to the stop while
        // the probes detach.
        if let Some(g) = &self.gpu_sampler {
            g.request_stop(stopped_ns);
        }
        // Detach every probe, then let the poller drain what is left.
        if let Some(p) = self.probes.take() {
            p.detach_all();
        }
        timer.mark("probes detached");
        self.poller_stop.store(true, Ordering::Release);
        let poller_ok = self.poller.take().is_none_or(|h| h.join().is_ok());
        timer.mark("ring buffer drained");
        let mut ignored = BTreeMap::new();
        while let Ok(n) = self.notices.try_recv() {
            self.on_notice(n, &mut known, &mut exited, &mut ignored);
        }
        self.record_open_calls(stopped_ns);
        let launches = self.open_calls.left_runs(&self.clock);
        if !launches.is_empty() {
            if let Ok(mut s) = self.shared.stats.lock() {
                for r in &launches {
                    s.add_run(r);
                }
            }
            self.send(WriterMsg::Events(
                launches.into_iter().map(Event::LaunchRun).collect(),
            ));
        }
        let runs = self.page_runs.left_open(&self.clock);
        if !runs.is_empty() {
            self.send(WriterMsg::Events(
                runs.into_iter().map(Event::Host).collect(),
            ));
        }
        // Stamped at the stop, so the rows fall inside the session's span.
        self.record_losses(last_losses, stopped_ns);
        self.send(WriterMsg::Snapshot(sampler.sample(stopped_ns)));
        for pid in known.difference(&exited) {
            self.send(WriterMsg::Process(ProcessInfo {
                pid: *pid,
                first_seen_ns: stopped_ns,
                last_seen_ns: stopped_ns,
                ..ProcessInfo::default()
            }));
        }
        if let Some(mut c) = self.child.take() {
            command_exit = command_exit.or_else(|| c.try_wait());
            c.detach();
        }
        timer.mark("open calls and runs sent");
        let gpu_ok = self.gpu_sampler.take().is_none_or(GpuSampler::join);
        timer.mark("GPU sampler ended");
        // The symboliser ends once the poller (its only sender) is gone.
        self.python_stop.store(true, Ordering::Release);
        let python_ok = self.python.take().is_none_or(|h| h.join().is_ok());
        timer.mark("Python sampler ended");
        let stacks_ok = python_ok & self.symbolizer.take().is_none_or(|h| h.join().is_ok());
        timer.mark("symboliser ended");
        self.record_stack_sources();
        let stop_text = self.stop_text(reason, command_exit);
        self.send(WriterMsg::Finish {
            stopped_ns,
            reason: stop_text.clone(),
        });
        let report = self
            .writer_thread
            .take()
            .ok_or_else(|| CaptureError::Internal("writer thread missing".into()))?
            .join()
            .map_err(|_| CaptureError::Internal("writer thread panicked".into()))?;
        timer.mark("database closed");
        let mut error = report.error.clone();
        if !poller_ok {
            error.get_or_insert_with(|| "poller thread panicked".into());
        }
        if !gpu_ok {
            error.get_or_insert_with(|| "GPU sampler thread panicked".into());
        }
        if !stacks_ok {
            error.get_or_insert_with(|| "stack sampler thread panicked".into());
        }
        if let Some(e) = &error {
            if let Ok(mut slot) = self.shared.error.lock() {
                *slot = Some(e.clone());
            }
        }
        self.shared.set_state(if error.is_some() {
            CaptureState::Failed
        } else {
            CaptureState::Stopped
        });
        Ok(CaptureSummary {
            status: self.shared.status(),
            session_id: report.session_id,
            started_ns: self.started_ns,
            stopped_ns: report.stopped_ns,
            reason,
            stop_text,
            stop_recorded: report.reason_recorded,
            command_exit,
        })
    }
}

impl Control {
    /// Why the capture ended, as the file records it.
    fn stop_text(&self, reason: StopReason, command_exit: Option<i32>) -> String {
        match reason {
            StopReason::Requested => self
                .shared
                .stop
                .reason()
                .unwrap_or_else(|| crate::stop::REQUESTED.into()),
            StopReason::Duration => self
                .duration
                .map(crate::stop::duration_elapsed)
                .unwrap_or_else(|| "duration elapsed".into()),
            StopReason::TargetExited => match (command_exit, self.root) {
                (None, Some(pid)) => format!("traced process {pid} exited"),
                _ => crate::stop::command_exited(command_exit),
            },
            StopReason::WriterFailed => {
                let error = self
                    .shared
                    .writer_failure
                    .fault()
                    .map(|f| f.error)
                    .unwrap_or_else(|| "unknown error".into());
                crate::stop::writer_failed(&error)
            }
        }
    }
}
