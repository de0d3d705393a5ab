//! The writer thread: the only owner of the [`TraceWriter`]. Everything to be
//! stored arrives over one bounded channel, so memory stays bounded and each
//! event batch is one transaction (a killed capture keeps every earlier batch).

use crate::status::LiveStats;
use crate::stop::WriterFailure;
use ingero_store::{
    Event, GpuDevice, GpuSamples, JobPlace, NcclCall, ProcessInfo, StackKind, StackSample,
    SystemSnapshot, TraceWriter,
};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Messages the writer thread understands.
#[derive(Debug)]
pub enum WriterMsg {
    /// A batch of events, written in one transaction.
    Events(Vec<Event>),
    /// A process seen (inserted or merged).
    Process(ProcessInfo),
    /// Where a process sits in its distributed job (its environment said).
    Place(i32, JobPlace),
    /// NCCL calls, with their communicators.
    Nccl(Vec<NcclCall>),
    /// A whole-system sample.
    Snapshot(SystemSnapshot),
    /// Events lost before reaching the writer.
    Loss {
        /// When the loss was noticed, epoch ns.
        ts_ns: i64,
        /// Where (ring buffer, in-flight table, decoder).
        source: &'static str,
        /// How many.
        lost: i64,
    },
    /// The GPUs NVML sees (once, at the start of the capture).
    GpuDevices(Vec<GpuDevice>),
    /// One round of GPU samples and polled state, written in one
    /// transaction (duplicates the driver returned are stored once).
    GpuSamples(GpuSamples),
    /// Resolved stack samples, written in one transaction.
    Stacks(Vec<StackSample>),
    /// How samples of one kind are taken in this session.
    StackSource {
        /// Sample kind.
        kind: StackKind,
        /// Rate per second per thread (0 = one per event).
        hz: i64,
        /// What the sampler said.
        note: String,
    },
    /// The runtime launch probes went (`runtime_probed` false) or came back.
    LaunchLevel {
        /// When, epoch ns.
        ts_ns: i64,
        /// Whether the runtime launch functions are probed from `ts_ns` on.
        runtime_probed: bool,
        /// Runtime launches probed by then.
        runtime_launches: i64,
    },
    /// Close the session and stop.
    Finish {
        /// When the capture stopped, epoch ns.
        stopped_ns: i64,
        /// Why, as the file will say it (`sessions.stop_reason`).
        reason: String,
    },
}

/// What the writer did, returned when it ends.
#[derive(Debug)]
pub struct WriterReport {
    /// Session id in the database.
    pub session_id: i64,
    /// First error met, if any (writing stops at the first error).
    pub error: Option<String>,
    /// The stop time written into the session: the capture's, or after a
    /// failure the last instant the file holds in full.
    pub stopped_ns: i64,
    /// Whether the stop time and reason made it into the file.
    pub reason_recorded: bool,
}

/// Starts the writer thread. `written` counts events committed; storage
/// errors are also recorded as dropped events in `stats`. The first storage
/// error is reported through `failure` (the control thread then stops the
/// capture), and nothing more is written after it but the stop itself.
pub fn spawn(
    writer: TraceWriter,
    rx: Receiver<WriterMsg>,
    written: Arc<AtomicU64>,
    stats: Arc<Mutex<LiveStats>>,
    failure: Arc<WriterFailure>,
) -> std::io::Result<JoinHandle<WriterReport>> {
    std::thread::Builder::new()
        .name("ingero-writer".into())
        .spawn(move || run(writer, rx, &written, &stats, &failure))
}

/// The writer thread's loop: writes each message until `Finish`, then
/// closes the session.
fn run(
    mut writer: TraceWriter,
    rx: Receiver<WriterMsg>,
    written: &AtomicU64,
    stats: &Mutex<LiveStats>,
    failure: &WriterFailure,
) -> WriterReport {
    let session_id = writer.session_id();
    let mut error: Option<String> = None;
    // Every event delivered before this instant is committed.
    let mut held_until_ns = crate::clock::realtime_ns();
    let mut finish = None;
    for msg in rx.iter() {
        if let WriterMsg::Finish { stopped_ns, reason } = msg {
            finish = Some((stopped_ns, reason));
            break;
        }
        if error.is_some() {
            if let WriterMsg::Events(batch) = &msg {
                note_dropped(stats, batch.len() as u64);
            }
            continue;
        }
        let received_ns = crate::clock::realtime_ns();
        let events = match &msg {
            WriterMsg::Events(batch) => Some(batch.len() as u64),
            _ => None,
        };
        match write_one(&mut writer, msg) {
            Ok(()) => {
                if let Some(n) = events {
                    written.fetch_add(n, Ordering::Relaxed);
                    held_until_ns = received_ns;
                }
            }
            Err(e) => {
                if let Some(n) = events {
                    note_dropped(stats, n);
                }
                let text = match &e {
                    // SQLite's own words ("database or disk is full").
                    ingero_store::StoreError::Sqlite(inner) => inner.to_string(),
                    other => other.to_string(),
                };
                tracing::error!(error = %text, "cannot write the trace database; stopping the capture");
                failure.set(text.clone(), held_until_ns);
                error = Some(text);
            }
        }
    }
    let (stopped, reason) =
        finish.unwrap_or_else(|| (crate::clock::realtime_ns(), crate::stop::REQUESTED.into()));
    let (stopped_ns, closed) = match &error {
        // The file holds everything up to the failure, and no more.
        Some(_) => (
            held_until_ns.min(stopped),
            writer.finish_after_failure(held_until_ns.min(stopped), &reason),
        ),
        None => (stopped, writer.finish_because(stopped, &reason)),
    };
    let reason_recorded = match closed {
        Ok(closing) => {
            if let Some(e) = closing.tidy_error {
                error.get_or_insert(e.to_string());
            }
            true
        }
        Err(e) => {
            error.get_or_insert(e.to_string());
            false
        }
    };
    WriterReport {
        session_id,
        error,
        stopped_ns,
        reason_recorded,
    }
}

/// Writes one message (not `Finish`).
fn write_one(writer: &mut TraceWriter, msg: WriterMsg) -> ingero_store::Result<()> {
    match msg {
        WriterMsg::Events(batch) => writer.write_batch(&batch),
        WriterMsg::Stacks(s) => writer.write_stacks(&s),
        WriterMsg::StackSource { kind, hz, note } => writer.write_stack_source(kind, hz, &note),
        WriterMsg::Process(p) => writer.upsert_process(&p),
        WriterMsg::Place(pid, place) => writer.set_job_place(pid, &place),
        WriterMsg::Nccl(calls) => writer.write_nccl(&calls),
        WriterMsg::Snapshot(s) => writer.write_snapshot(&s),
        WriterMsg::GpuDevices(d) => writer.write_gpu_devices(&d),
        WriterMsg::GpuSamples(s) => writer.write_gpu_samples(&s).map(|_| ()),
        WriterMsg::Loss {
            ts_ns,
            source,
            lost,
        } => writer.record_loss(ts_ns, source, lost),
        WriterMsg::LaunchLevel {
            ts_ns,
            runtime_probed,
            runtime_launches,
        } => writer.write_launch_level_change(ts_ns, runtime_probed, runtime_launches),
        WriterMsg::Finish { .. } => Ok(()),
    }
}

fn note_dropped(stats: &Mutex<LiveStats>, n: u64) {
    if let Ok(mut s) = stats.lock() {
        s.losses.not_written += n;
    }
}
