//! Python frames of traced interpreters (CPython 3.10-3.13), read by the
//! `py-spy` library from a sampler thread of ingero's own.
//!
//! Why a user-space reader rather than an eBPF frame walker: a walker in
//! the kernel must know, per CPython minor version, the offsets of the
//! thread state, the frame (3.11+: `_PyInterpreterFrame`) and code objects,
//! and must copy names and file names out of Python strings within the
//! verifier's bounded loops, at every sample, inside the traced thread's
//! time slice. py-spy already carries those layouts for 3.10-3.13 (and
//! later); it reads the interpreter's memory with `process_vm_readv`
//! without stopping the process ([`LockingStrategy::NonBlocking`]), so the
//! traced process pays nothing but cache traffic: the cost is ingero's own
//! CPU time, reported as `python_cpu_ns` in the capture status. The price
//! is accuracy at the edges: a read that races the interpreter changing
//! frames can fail or return a torn stack; a failed round is counted in
//! `python_errors` and skipped, never stored half-read.
//!
//! Each round reads every thread of every attached process once and stamps
//! the samples with the capture clock (the midpoint of the read), with the
//! OS thread id CPython keeps (`native_thread_id`, 3.8+), so that a Python
//! sample joins the CUDA calls and scheduler intervals of the same thread
//! by tid and time.

use crate::clock::Clock;
use crate::status::StackStatus;
use crate::writer::WriterMsg;
use ingero_store::{StackFrame, StackKind, StackSample};
use py_spy::config::LockingStrategy;
use py_spy::{Config, PythonSpy};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Attempts to attach to a process before giving up (an interpreter not
/// yet initialised refuses for its first tens of milliseconds).
const ATTACH_TRIES: u32 = 25;
/// Time between attach attempts.
const ATTACH_RETRY: Duration = Duration::from_millis(200);
/// How often the sampler looks for Python processes while it has none.
const IDLE_POLL: Duration = Duration::from_millis(20);
/// Samples wait at most this long before they are sent to the writer.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Processes of the capture, as the control thread learns them; exec
/// bumps a process's generation (a new image: try it again).
#[derive(Debug, Default)]
pub struct LivePids {
    pids: Mutex<BTreeMap<i32, u32>>,
}

impl LivePids {
    fn with<T>(&self, f: impl FnOnce(&mut BTreeMap<i32, u32>) -> T) -> T {
        match self.pids.lock() {
            Ok(mut g) => f(&mut g),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// A process of the capture.
    pub fn insert(&self, pid: i32) {
        self.with(|m| {
            m.entry(pid).or_insert(0);
        });
    }

    /// The process replaced its image.
    pub fn exec(&self, pid: i32) {
        self.with(|m| *m.entry(pid).or_insert(0) += 1);
    }

    /// The process ended.
    pub fn remove(&self, pid: i32) {
        self.with(|m| {
            m.remove(&pid);
        });
    }

    /// Every process with its generation.
    pub fn snapshot(&self) -> Vec<(i32, u32)> {
        self.with(|m| m.iter().map(|(p, g)| (*p, *g)).collect())
    }
}

/// What the Python sampler needs from the capture.
pub(crate) struct PythonLinks {
    /// Capture clock.
    pub(crate) clock: Clock,
    /// Where samples go.
    pub(crate) writer: SyncSender<WriterMsg>,
    /// Processes to look at.
    pub(crate) pids: Arc<LivePids>,
    /// Counters for the status.
    pub(crate) status: Arc<Mutex<StackStatus>>,
    /// Set to end the sampler.
    pub(crate) stop: Arc<AtomicBool>,
}

/// True when `pid` runs a CPython interpreter: its executable is named
/// python* or it maps libpython.
pub fn is_python(pid: i32) -> bool {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    if exe.starts_with("python") {
        return true;
    }
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|m| m.contains("/libpython3"))
        .unwrap_or(false)
}

fn spy_config() -> Config {
    Config {
        blocking: LockingStrategy::NonBlocking,
        native: false,
        include_idle: true,
        collect_thread_names: false,
        ..Config::default()
    }
}

/// Attach state of one process.
struct Attach {
    generation: u32,
    tries: u32,
    next: Instant,
    spy: Option<PythonSpy>,
}

/// Starts the sampler: every `1/hz` s one round over the attached processes.
pub(crate) fn spawn(hz: u32, links: PythonLinks) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ingero-python".into())
        .spawn(move || run(hz.max(1), links))
}

/// The sampler thread's loop: one round every `1/hz` s until stopped.
fn run(hz: u32, links: PythonLinks) {
    let period = Duration::from_nanos(1_000_000_000 / u64::from(hz));
    let mut sampler = PythonSampler::new();
    let mut next = Instant::now();
    loop {
        let stopping = links.stop.load(Ordering::Acquire);
        sampler.follow(links.pids.snapshot(), Instant::now());
        sampler.read_stacks(&links.clock);
        sampler.publish(&links.status);
        if !sampler.flush(&links.writer, stopping) {
            return;
        }
        if stopping {
            return;
        }
        // With nothing attached, look for new processes every IDLE_POLL
        // rather than at the sampling rate.
        next += if sampler.idle() {
            period.max(IDLE_POLL)
        } else {
            period
        };
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// What the sampler thread keeps between rounds: the processes it follows
/// and their readers, the samples not yet sent, and its counters.
struct PythonSampler {
    /// py-spy's settings (non-blocking reads, Python frames only).
    config: Config,
    /// Attach state per followed process.
    procs: HashMap<i32, Attach>,
    /// Samples not yet sent to the writer.
    out: Vec<StackSample>,
    /// When samples were last sent.
    last_flush: Instant,
    /// Rounds whose read failed.
    errors: u64,
    /// Samples taken.
    samples: u64,
    /// Why processes could not be attached, once they ran out of tries.
    failed_attach: Vec<String>,
    /// Processes attached over the capture.
    attached: u32,
}

impl PythonSampler {
    /// A sampler following no process yet.
    fn new() -> PythonSampler {
        PythonSampler {
            config: spy_config(),
            procs: HashMap::new(),
            out: Vec::new(),
            last_flush: Instant::now(),
            errors: 0,
            samples: 0,
            failed_attach: Vec::new(),
            attached: 0,
        }
    }

    /// Follows the processes of `live` (process, generation) and no other,
    /// and tries to attach to those not attached yet whose retry is due:
    /// a process that is not a Python interpreter is given up at once,
    /// one that refuses after [`ATTACH_TRIES`] attempts for good.
    fn follow(&mut self, live: Vec<(i32, u32)>, now: Instant) {
        self.procs
            .retain(|pid, _| live.iter().any(|(p, _)| p == pid));
        for (pid, generation) in live {
            let a = self.procs.entry(pid).or_insert(Attach {
                generation,
                tries: 0,
                next: now,
                spy: None,
            });
            if a.generation != generation {
                *a = Attach {
                    generation,
                    tries: 0,
                    next: now,
                    spy: None,
                };
            }
            if a.spy.is_some() || a.tries >= ATTACH_TRIES || a.next > now {
                continue;
            }
            if a.tries == 0 && !is_python(pid) {
                a.tries = ATTACH_TRIES;
                continue;
            }
            a.tries += 1;
            a.next = now + ATTACH_RETRY;
            match PythonSpy::new(pid as py_spy::Pid, &self.config) {
                Ok(spy) => {
                    a.spy = Some(spy);
                    self.attached += 1;
                }
                Err(e) if a.tries >= ATTACH_TRIES => {
                    self.failed_attach.push(format!("pid {pid}: {e}"));
                }
                Err(_) => {}
            }
        }
    }

    /// Reads every thread of every attached process once, stamping each
    /// sample at the midpoint of its process's read; a failed read is
    /// counted, and a process that is gone is given up.
    fn read_stacks(&mut self, clock: &Clock) {
        for (pid, a) in self.procs.iter_mut() {
            let Some(spy) = a.spy.as_mut() else { continue };
            let t0 = clock.now_epoch();
            let read = spy.get_stack_traces();
            let t1 = clock.now_epoch();
            let ts_ns = t0 + (t1 - t0) / 2;
            match read {
                Ok(traces) => {
                    for t in traces {
                        let Some(tid) = t.os_thread_id else { continue };
                        let frames = t
                            .frames
                            .iter()
                            .map(|f| StackFrame::python(&f.name, &f.filename, f.line.max(0) as u32))
                            .collect();
                        self.samples += 1;
                        self.out.push(StackSample {
                            ts_ns,
                            pid: *pid,
                            tid: tid as i32,
                            cpu: -1,
                            kind: StackKind::Python,
                            off_cpu_ns: 0,
                            state: i64::from(t.active),
                            frames,
                        });
                    }
                }
                Err(_) => {
                    self.errors += 1;
                    if !crate::procs::exists(*pid) {
                        a.spy = None;
                        a.tries = ATTACH_TRIES;
                    }
                }
            }
        }
    }

    /// Publishes the counters and the sampler's CPU time for the status.
    fn publish(&self, status: &Mutex<StackStatus>) {
        if let Ok(mut s) = status.lock() {
            s.python = self.samples;
            s.python_errors = self.errors;
            s.python_processes = self.attached;
            s.python_cpu_ns = crate::thread_cpu::thread_cpu_ns();
            if !self.failed_attach.is_empty() {
                s.python_note = format!("could not attach: {}", self.failed_attach.join("; "));
            }
        }
    }

    /// Sends the samples held when stopping or when they have waited
    /// [`FLUSH_EVERY`]; false once the writer is gone.
    fn flush(&mut self, writer: &SyncSender<WriterMsg>, stopping: bool) -> bool {
        if !self.out.is_empty() && (stopping || self.last_flush.elapsed() >= FLUSH_EVERY) {
            if writer
                .send(WriterMsg::Stacks(std::mem::take(&mut self.out)))
                .is_err()
            {
                return false;
            }
            self.last_flush = Instant::now();
        }
        true
    }

    /// True when no process is attached.
    fn idle(&self) -> bool {
        self.procs.values().all(|a| a.spy.is_none())
    }
}
