//! Live capture behind the `list_gpu_processes`, `start_trace`,
//! `get_trace_status` and `stop_trace` tools, driven through the capture
//! engine (`ingero-probes`) in the background, writing new databases inside
//! the allowed folder, within the operator's limits ([`limits`]). Off unless
//! the server runs with `--allow-capture`.

mod ending;
pub mod limits;
pub(crate) mod output;
pub mod processes;
pub mod request;
pub mod view;
mod watch;

pub use limits::CaptureLimits;
pub use request::StartTraceArgs;
pub use view::CaptureStatus;

use ingero_probes::{CaptureConfig, CaptureHandle, Target};
use ingero_store::parse_duration_ns;
use limits::duration_text;
use processes::GpuProcesses;
use request::Chosen;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;
use view::CaptureBrief;
use watch::SizeWatch;

/// The ending a capture stopped by `stop_trace` records.
const STOP_TRACE: &str = "stop_trace requested";

/// Finished captures remembered for get_trace_status, besides running ones.
const KEEP_FINISHED: usize = 16;

/// Why capture cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The server was started without `--allow-capture`.
    #[error("capture is disabled on this server (start it with `ingero mcp --allow-capture`)")]
    Disabled,
    /// No capture has been started on this server.
    #[error("no capture has been started on this server (call start_trace first)")]
    NotStarted,
    /// As many captures as the operator allows are running.
    #[error("{running} and this server allows {limit} at a time (--capture-max-concurrent); stop one with stop_trace first")]
    Busy {
        /// The running captures' databases.
        running: String,
        /// The operator's limit.
        limit: usize,
    },
    /// The request was malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The engine refused or failed (permissions, kernel support, bad pid...).
    #[error("capture not available on this build/host: {0}")]
    Engine(String),
}

/// A capture in progress.
struct Running {
    handle: CaptureHandle,
    watch: Option<SizeWatch>,
}

/// Where one capture is in its life.
enum Phase {
    Running(Running),
    Done(Box<CaptureStatus>),
}

/// One capture started by this server.
struct Entry {
    /// Database file name inside the allowed folder.
    name: String,
    output: PathBuf,
    target: Chosen,
    /// True when the capture's duration is the operator's limit (none, or
    /// none shorter, was asked), so reaching it is the limit's doing.
    duration_is_limit: bool,
    phase: Phase,
}

/// The capture controller shared by all sessions of one server.
pub struct Capture {
    allowed: bool,
    output_dir: PathBuf,
    limits: CaptureLimits,
    entries: Mutex<Vec<Entry>>,
}

impl Capture {
    /// A controller that writes new databases into `output_dir`.
    pub fn new(allowed: bool, output_dir: PathBuf, limits: CaptureLimits) -> Capture {
        Capture {
            allowed,
            output_dir,
            limits,
            entries: Mutex::new(Vec::new()),
        }
    }

    fn check(&self) -> Result<(), CaptureError> {
        if self.allowed {
            Ok(())
        } else {
            Err(CaptureError::Disabled)
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, Vec<Entry>>, CaptureError> {
        self.entries
            .lock()
            .map_err(|_| CaptureError::Engine("capture state poisoned".into()))
    }

    /// The capture's length: what was asked, within the operator's limit;
    /// and whether it is the limit.
    fn duration(&self, asked: Option<&str>) -> Result<(Option<Duration>, bool), CaptureError> {
        let asked = asked
            .map(parse_duration_ns)
            .transpose()
            .map_err(|e| CaptureError::BadRequest(format!("duration: {e}")))?
            .map(|ns| match u64::try_from(ns) {
                Ok(ns) if ns > 0 => Ok(Duration::from_nanos(ns)),
                _ => Err(CaptureError::BadRequest(
                    "duration must be positive, e.g. 30s or 5m (or leave it out)".into(),
                )),
            })
            .transpose()?;
        match (asked, self.limits.max_duration) {
            (Some(a), Some(max)) if a > max => Err(CaptureError::BadRequest(format!(
                "duration {} is longer than this server allows (--capture-max-duration {}): ask for at most {}",
                duration_text(a),
                duration_text(max),
                duration_text(max)
            ))),
            (Some(a), _) => Ok((Some(a), false)),
            (None, Some(max)) => Ok((Some(max), true)),
            (None, None) => Ok((None, false)),
        }
    }

    /// Starts a capture.
    pub fn start(&self, args: &StartTraceArgs) -> Result<CaptureStatus, CaptureError> {
        tracing::info!(pid = ?args.pid, pids = ?args.pids, process_name = ?args.process_name,
            all_processes = args.all_processes, duration = ?args.duration, output = ?args.output,
            "start_trace requested");
        self.check()?;
        let chosen = request::choose(args, || ingero_probes::gpu_processes::list().processes)?;
        let (duration, duration_is_limit) = self.duration(args.duration.as_deref())?;
        let ring_bytes = args
            .ring_size
            .as_deref()
            .map(ingero_probes::config::parse_ring_size)
            .transpose()
            .map_err(|e| CaptureError::BadRequest(format!("ring_size: {e}")))?;
        let mut entries = self.lock()?;
        self.collect_finished(&mut entries);
        let running: Vec<&Entry> = entries
            .iter()
            .filter(|e| matches!(e.phase, Phase::Running(_)))
            .collect();
        if running.len() >= self.limits.max_concurrent {
            let names: Vec<&str> = running.iter().map(|e| e.name.as_str()).collect();
            let running = match names.as_slice() {
                [one] => format!("a capture is already running into {one}"),
                many => format!(
                    "{} captures are already running ({})",
                    many.len(),
                    many.join(", ")
                ),
            };
            return Err(CaptureError::Busy {
                running,
                limit: self.limits.max_concurrent,
            });
        }
        if let Some(other) = already_traced(&running, &chosen.target) {
            return Err(CaptureError::BadRequest(format!(
                "{} is already traced by the capture into {other}",
                chosen.description
            )));
        }
        let (name, output) = output::path(&self.output_dir, args.output.as_deref())?;
        let mut config = CaptureConfig::new(chosen.target.clone(), output.clone());
        config.duration = duration;
        if let Some(bytes) = ring_bytes {
            config.ring_bytes = bytes;
        }
        match args.launch_sample {
            Some(n) if n > 1_000_000 => {
                return Err(CaptureError::BadRequest(format!(
                    "launch_sample {n} is too large: time one launch in at most 1000000 (16 is typical; 0 or 1 times every launch)"
                )))
            }
            Some(n) => config.launch_sample = n,
            None => {}
        }
        match args.launch_rows {
            Some(n) if n > 1_000_000 => {
                return Err(CaptureError::BadRequest(format!(
                    "launch_rows {n} is too large: keep one launch row in at most 1000000 (32 is the default; 0 or 1 keeps every launch)"
                )))
            }
            Some(n) => config.launch_rows = n,
            None => {}
        }
        let handle =
            ingero_probes::start(config).map_err(|e| CaptureError::Engine(e.to_string()))?;
        let watch = match self.limits.max_bytes {
            Some(max) => match SizeWatch::start(output.clone(), max, handle.stopper()) {
                Ok(w) => Some(w),
                Err(e) => {
                    let _ = handle.stop();
                    return Err(CaptureError::Engine(format!(
                        "cannot watch the database size: {e}"
                    )));
                }
            },
            None => None,
        };
        entries.push(Entry {
            name,
            output,
            target: chosen,
            duration_is_limit,
            phase: Phase::Running(Running { handle, watch }),
        });
        let at = entries.len() - 1;
        Ok(self.report(&entries, at))
    }

    /// Reports the capture into `output`, or the newest one.
    pub fn status(&self, output: Option<&str>) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        let mut entries = self.lock()?;
        self.collect_finished(&mut entries);
        let at = match output {
            Some(name) => find(&entries, name)?,
            None => entries
                .len()
                .checked_sub(1)
                .ok_or(CaptureError::NotStarted)?,
        };
        Ok(self.report(&entries, at))
    }

    /// Stops the capture into `output`, or the one running (or collects
    /// one that ended by itself) and returns its final state; the database
    /// is then complete.
    pub fn stop(&self, output: Option<&str>) -> Result<CaptureStatus, CaptureError> {
        self.check()?;
        let mut entries = self.lock()?;
        let at = match output {
            Some(name) => find(&entries, name)?,
            None => {
                let running: Vec<usize> = (0..entries.len())
                    .filter(|&i| matches!(entries[i].phase, Phase::Running(_)))
                    .collect();
                match running.as_slice() {
                    [one] => *one,
                    [] => entries
                        .len()
                        .checked_sub(1)
                        .ok_or(CaptureError::NotStarted)?,
                    several => {
                        let names: Vec<&str> =
                            several.iter().map(|&i| entries[i].name.as_str()).collect();
                        return Err(CaptureError::BadRequest(format!(
                            "{} captures are running ({}): name the one to stop with output",
                            names.len(),
                            names.join(", ")
                        )));
                    }
                }
            }
        };
        self.finish(&mut entries[at], STOP_TRACE);
        Ok(self.report(&entries, at))
    }

    /// Stops every running capture the way `stop_trace` does (probes
    /// detached, last batch written, stop time set, WAL checkpointed): the
    /// server calls it before it exits, whatever ended it. Returns the
    /// databases it finalised. `reason` is what their files record as the
    /// ending ("MCP client disconnected (stdin closed)").
    pub fn stop_all(&self, reason: &str) -> Vec<String> {
        let Ok(mut entries) = self.entries.lock() else {
            return Vec::new();
        };
        let mut stopped = Vec::new();
        for e in entries.iter_mut() {
            if matches!(e.phase, Phase::Running(_)) {
                self.finish(e, reason);
                stopped.push(e.name.clone());
            }
        }
        stopped
    }

    /// The running captures' targets and database names.
    pub fn running_targets(&self) -> Vec<(Target, String)> {
        let Ok(mut entries) = self.lock() else {
            return Vec::new();
        };
        self.collect_finished(&mut entries);
        entries
            .iter()
            .filter(|e| matches!(e.phase, Phase::Running(_)))
            .map(|e| (e.target.target.clone(), e.name.clone()))
            .collect()
    }

    /// The host's GPU processes, marked with the captures tracing them.
    pub fn gpu_processes(&self) -> Result<GpuProcesses, CaptureError> {
        self.check()?;
        let running = self.running_targets();
        Ok(processes::mark(
            ingero_probes::gpu_processes::list(),
            &running,
        ))
    }

    /// Collects every capture that ended by itself (duration, limit, target
    /// exit), so its status says why; forgets the oldest finished ones.
    fn collect_finished(&self, entries: &mut Vec<Entry>) {
        for e in entries.iter_mut() {
            if matches!(&e.phase, Phase::Running(r) if r.handle.is_finished()) {
                // Ended by itself: its own reason stands.
                self.finish(e, STOP_TRACE);
            }
        }
        let finished = entries
            .iter()
            .filter(|e| matches!(e.phase, Phase::Done(_)))
            .count();
        let mut extra = finished.saturating_sub(KEEP_FINISHED);
        entries.retain(|e| {
            let drop = extra > 0 && matches!(e.phase, Phase::Done(_));
            extra -= usize::from(drop);
            !drop
        });
    }

    /// Stops `e` if it runs, for `reason` (unless it already ended for
    /// another), and records its final status.
    fn finish(&self, e: &mut Entry, reason: &str) {
        if matches!(e.phase, Phase::Done(_)) {
            return;
        }
        let lost = view::failed(
            &e.output,
            "the capture's state was lost while stopping".into(),
            self.limits.view(),
        );
        let Phase::Running(r) = std::mem::replace(&mut e.phase, Phase::Done(Box::new(lost))) else {
            return;
        };
        let result = r.handle.stop_because(reason);
        let size_reached = r.watch.map(SizeWatch::finish).unwrap_or(false);
        let status = match result {
            Ok(summary) => {
                let mut s = view::from_engine(&summary.status, &e.output, self.limits.view());
                s.running = false;
                let (reason, limit) = ending::reason(
                    &self.limits,
                    summary.reason,
                    size_reached,
                    e.duration_is_limit,
                );
                s.stop_reason = Some(reason);
                s.limit_reached = limit;
                s.stopped = Some(view::stopped_sentence(&summary));
                s
            }
            Err(err) => view::failed(&e.output, err.to_string(), self.limits.view()),
        };
        e.phase = Phase::Done(Box::new(status));
    }

    /// The status of `entries[at]` with the list of every capture.
    fn report(&self, entries: &[Entry], at: usize) -> CaptureStatus {
        let e = &entries[at];
        let mut s = match &e.phase {
            Phase::Running(r) => {
                view::from_engine(&r.handle.status(), &e.output, self.limits.view())
            }
            Phase::Done(s) => s.as_ref().clone(),
        };
        s.target = e.target.description.clone();
        s.database_bytes = view::database_bytes(&e.output);
        s.captures = entries
            .iter()
            .map(|e| CaptureBrief {
                output: e.name.clone(),
                running: matches!(e.phase, Phase::Running(_)),
            })
            .collect();
        s
    }
}

/// The capture (database name) among `running` that already traces `target`.
fn already_traced(running: &[&Entry], target: &Target) -> Option<String> {
    running.iter().find_map(|e| {
        let overlaps = match (&e.target.target, target) {
            (Target::AllProcesses, _) | (_, Target::AllProcesses) => true,
            (Target::Pid(root), Target::Pid(pid)) => {
                ingero_probes::procs::tree(*root).contains(pid)
            }
            _ => false,
        };
        overlaps.then(|| e.name.clone())
    })
}

/// The index of the capture into `name`.
fn find(entries: &[Entry], name: &str) -> Result<usize, CaptureError> {
    entries.iter().rposition(|e| e.name == name).ok_or_else(|| {
        let known: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        if known.is_empty() {
            CaptureError::NotStarted
        } else {
            CaptureError::BadRequest(format!(
                "no capture into {name:?} on this server; its captures: {}",
                known.join(", ")
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limited(max: Option<Duration>) -> Capture {
        let limits = CaptureLimits {
            max_duration: max,
            ..CaptureLimits::default()
        };
        Capture::new(true, std::env::temp_dir(), limits)
    }

    #[test]
    fn the_time_limit_bounds_what_is_asked_and_what_is_not() {
        let c = limited(Some(Duration::from_secs(600)));
        assert_eq!(
            c.duration(Some("2m")).ok(),
            Some((Some(Duration::from_secs(120)), false))
        );
        assert_eq!(
            c.duration(None).ok(),
            Some((Some(Duration::from_secs(600)), true))
        );
        let e = c.duration(Some("1h")).err().map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some(
                "duration 1h is longer than this server allows (--capture-max-duration 10m): \
                 ask for at most 10m"
            )
        );
        let free = limited(None);
        assert_eq!(free.duration(None).ok(), Some((None, false)));
        for bad in ["0s", "-5s", "soon"] {
            assert!(free.duration(Some(bad)).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn status_and_stop_before_any_capture_say_to_start_one() {
        let c = limited(None);
        for e in [
            c.status(None).err(),
            c.stop(None).err(),
            c.status(Some("x.db")).err(),
        ] {
            assert!(matches!(e, Some(CaptureError::NotStarted)), "{e:?}");
        }
        let off = Capture::new(false, std::env::temp_dir(), CaptureLimits::default());
        assert!(matches!(
            off.gpu_processes().err(),
            Some(CaptureError::Disabled)
        ));
    }
}
