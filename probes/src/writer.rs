//! The writer thread: the only owner of the [`TraceWriter`]. Everything to be
//! stored arrives over one bounded channel, so memory stays bounded and each
//! event batch is one transaction (a killed capture keeps every earlier batch).

use crate::status::LiveStats;
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
    /// Close the session at this epoch ns and stop.
    Finish(i64),
}

/// What the writer did, returned when it ends.
#[derive(Debug)]
pub struct WriterReport {
    /// Session id in the database.
    pub session_id: i64,
    /// First error met, if any (writing stops at the first error).
    pub error: Option<String>,
}

/// Starts the writer thread. `written` counts events committed; storage
/// errors are also recorded as dropped events in `stats`.
pub fn spawn(
    mut writer: TraceWriter,
    rx: Receiver<WriterMsg>,
    written: Arc<AtomicU64>,
    stats: Arc<Mutex<LiveStats>>,
) -> std::io::Result<JoinHandle<WriterReport>> {
    std::thread::Builder::new()
        .name("ingero-writer".into())
        .spawn(move || {
            let session_id = writer.session_id();
            let mut error: Option<String> = None;
            let mut finished_at = None;
            for msg in rx.iter() {
                let result = match msg {
                    WriterMsg::Events(batch) => {
                        if error.is_some() {
                            note_dropped(&stats, batch.len() as u64);
                            continue;
                        }
                        let r = writer.write_batch(&batch);
                        match &r {
                            Ok(()) => {
                                written.fetch_add(batch.len() as u64, Ordering::Relaxed);
                            }
                            Err(_) => note_dropped(&stats, batch.len() as u64),
                        }
                        r
                    }
                    WriterMsg::Stacks(s) => writer.write_stacks(&s),
                    WriterMsg::StackSource { kind, hz, note } => {
                        writer.write_stack_source(kind, hz, &note)
                    }
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
                    WriterMsg::Finish(ts) => {
                        finished_at = Some(ts);
                        break;
                    }
                };
                if let Err(e) = result {
                    if error.is_none() {
                        error = Some(e.to_string());
                    }
                }
            }
            let stopped = finished_at.unwrap_or_else(crate::clock::realtime_ns);
            if let Err(e) = writer.finish(stopped) {
                error.get_or_insert(e.to_string());
            }
            WriterReport { session_id, error }
        })
}

fn note_dropped(stats: &Mutex<LiveStats>, n: u64) {
    if let Ok(mut s) = stats.lock() {
        s.losses.not_written += n;
    }
}
