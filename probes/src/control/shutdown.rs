//! The stop: detach the probes, drain what the kernel still holds, record
//! what was left open, end the other threads in order, close the database
//! and report.

use super::losses::Recorded;
use super::notices::SeenProcesses;
use super::Control;
use crate::nvml::sampler::GpuSampler;
use crate::phase_timer::PhaseTimer;
use crate::status::{CaptureState, CaptureSummary, StopReason};
use crate::sysinfo::Sampler;
use crate::writer::{WriterMsg, WriterReport};
use crate::CaptureError;
use ingero_store::catalog::loss_source;
use ingero_store::{Event, ProcessInfo};
use std::sync::atomic::Ordering;

/// Which of the capture's threads ended without panicking.
struct ThreadsEnded {
    poller: bool,
    gpu: bool,
    stacks: bool,
}

impl Control {
    /// Runs the stop for `reason` and builds the summary.
    pub(super) fn shutdown(
        mut self,
        reason: StopReason,
        command_exit: Option<i32>,
        last_losses: Recorded,
        mut seen: SeenProcesses,
        mut sampler: Sampler,
    ) -> Result<CaptureSummary, CaptureError> {
        self.shared.set_state(CaptureState::Stopping);
        let timer = PhaseTimer::start("capture stop");
        let stopped_ns = self.clock.now_epoch();
        let poller_ok = self.detach_and_drain(stopped_ns, &timer);
        while let Ok(n) = self.threads.notices.try_recv() {
            self.on_notice(n, &mut seen);
        }
        self.record_left_open(stopped_ns);
        // Stamped at the stop, so the rows fall inside the session's span.
        self.record_losses(last_losses, stopped_ns);
        self.send(WriterMsg::Snapshot(sampler.sample(stopped_ns)));
        self.record_still_running(&seen, stopped_ns);
        let command_exit = self.let_go_of_command(command_exit);
        timer.mark("open calls and runs sent");
        let (gpu_ok, stacks_ok) = self.end_samplers(&timer);
        self.record_stack_sources();
        let stop_text = self.stop_text(reason, command_exit);
        let report = self.close_database(stopped_ns, &stop_text)?;
        timer.mark("database closed");
        let ended = ThreadsEnded {
            poller: poller_ok,
            gpu: gpu_ok,
            stacks: stacks_ok,
        };
        self.set_final_state(&report, &ended);
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

    /// Detaches every probe and lets the poller drain what the ring buffer
    /// still holds; the GPU sampler is told the stop first, so it drains
    /// the driver buffers meanwhile. False when the poller panicked.
    fn detach_and_drain(&mut self, stopped_ns: i64, timer: &PhaseTimer) -> bool {
        if let Some(g) = &self.threads.gpu_sampler {
            g.request_stop(stopped_ns);
        }
        if let Some(p) = self.probes.take() {
            p.detach_all();
        }
        timer.mark("probes detached");
        self.threads.poller_stop.store(true, Ordering::Release);
        let poller_ok = self.threads.poller.take().is_none_or(|h| h.join().is_ok());
        timer.mark("ring buffer drained");
        poller_ok
    }

    /// Records what the kernel still held once the probes were gone: calls
    /// in flight, launch runs, folds of calls and page-allocation runs not
    /// yet sent.
    fn record_left_open(&self, stopped_ns: i64) {
        self.record_open_calls(stopped_ns);
        let launches = self.tables.open_calls.left_runs(&self.clock);
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
        let folds = self.tables.open_calls.left_folds(&self.clock);
        if !folds.is_empty() {
            if let Ok(mut s) = self.shared.stats.lock() {
                for f in &folds {
                    s.add_fold(f);
                }
            }
            self.send(WriterMsg::Events(
                folds.into_iter().map(Event::CallFold).collect(),
            ));
        }
        let runs = self.tables.page_runs.left_open(&self.clock);
        if !runs.is_empty() {
            self.send(WriterMsg::Events(
                runs.into_iter().map(Event::Host).collect(),
            ));
        }
    }

    /// Records the calls still open once the probes are gone, and their
    /// count under `open_at_stop`.
    fn record_open_calls(&self, stopped_ns: i64) {
        let mut nccl = Vec::new();
        let calls: Vec<_> = self
            .tables
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

    /// Gives every process seen and not seen exiting a last row at the
    /// stop, so its span in the file reaches the end of the capture.
    fn record_still_running(&self, seen: &SeenProcesses, stopped_ns: i64) {
        for pid in seen.known.difference(&seen.exited) {
            self.send(WriterMsg::Process(ProcessInfo {
                pid: *pid,
                first_seen_ns: stopped_ns,
                last_seen_ns: stopped_ns,
                ..ProcessInfo::default()
            }));
        }
    }

    /// Lets the launched command go on without the capture, learning its
    /// exit status first when it has ended already.
    fn let_go_of_command(&mut self, command_exit: Option<i32>) -> Option<i32> {
        let mut command_exit = command_exit;
        if let Some(mut c) = self.child.take() {
            command_exit = command_exit.or_else(|| c.try_wait());
            c.detach();
        }
        command_exit
    }

    /// Ends the GPU sampler, the Python sampler and the symboliser (which
    /// ends once the poller, its only sender, is gone), in that order: true
    /// for the GPU sampler, then for the stack samplers, when they ended
    /// without panicking.
    fn end_samplers(&mut self, timer: &PhaseTimer) -> (bool, bool) {
        let gpu_ok = self.threads.gpu_sampler.take().is_none_or(GpuSampler::join);
        timer.mark("GPU sampler ended");
        self.threads.python_stop.store(true, Ordering::Release);
        let python_ok = self.threads.python.take().is_none_or(|h| h.join().is_ok());
        timer.mark("Python sampler ended");
        let stacks_ok = python_ok
            & self
                .threads
                .symbolizer
                .take()
                .is_none_or(|h| h.join().is_ok());
        timer.mark("symboliser ended");
        (gpu_ok, stacks_ok)
    }

    /// Sends the stop to the writer and waits for it to close the session.
    fn close_database(
        &mut self,
        stopped_ns: i64,
        stop_text: &str,
    ) -> Result<WriterReport, CaptureError> {
        self.send(WriterMsg::Finish {
            stopped_ns,
            reason: stop_text.to_string(),
        });
        self.threads
            .writer_thread
            .take()
            .ok_or_else(|| CaptureError::Internal("writer thread missing".into()))?
            .join()
            .map_err(|_| CaptureError::Internal("writer thread panicked".into()))
    }

    /// Failed when the writer reported an error or a thread panicked (the
    /// first of these is the capture's error), else stopped.
    fn set_final_state(&self, report: &WriterReport, ended: &ThreadsEnded) {
        let mut error = report.error.clone();
        if !ended.poller {
            error.get_or_insert_with(|| "poller thread panicked".into());
        }
        if !ended.gpu {
            error.get_or_insert_with(|| "GPU sampler thread panicked".into());
        }
        if !ended.stacks {
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
    }

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
