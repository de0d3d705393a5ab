//! The poller thread: drains the ring buffer on a timer (the kernel side
//! submits without wakeups), decodes records, feeds the live statistics, and
//! hands batches to the writer and lifecycle notices to the control thread.

use crate::clock::Clock;
use crate::decode::RawStack;
use crate::decode::{decode, Record};
use crate::stacks::route::OffCpuJoin;
use crate::stacks::StackMsg;
use crate::status::LiveStats;
use crate::writer::WriterMsg;
use aya::maps::{MapData, RingBuf};
use ingero_store::{Event, HostEvent, HostKind};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Lifecycle facts the control thread turns into process rows and rescans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// A pid appeared in events for the first time.
    Seen {
        /// Process id.
        pid: i32,
        /// Epoch ns.
        ts_ns: i64,
    },
    /// A traced process forked a child.
    Fork {
        /// Parent.
        parent: i32,
        /// Child.
        child: i32,
        /// Command name.
        comm: String,
        /// Epoch ns.
        ts_ns: i64,
    },
    /// A traced process called exec.
    Exec {
        /// Process id.
        pid: i32,
        /// New command name.
        comm: String,
        /// Epoch ns.
        ts_ns: i64,
    },
    /// A traced process exited.
    Exit {
        /// Process id.
        pid: i32,
        /// Epoch ns.
        ts_ns: i64,
    },
    /// A traced process mapped executable code: look for new CUDA libraries.
    Rescan {
        /// Process id.
        pid: i32,
    },
}

/// Largest batch handed to the writer at once.
const MAX_BATCH: usize = 32_768;
/// Records decoded per statistics lock.
const CHUNK: usize = 4096;

/// Poller settings.
pub struct PollerConfig {
    /// Time between drains.
    pub poll_interval: Duration,
    /// Time between batches to the writer.
    pub batch_interval: Duration,
}

/// Where stack records go: the symboliser thread, with the off-CPU stacks
/// waiting for their switch records.
pub struct StackRoute {
    /// To the symboliser thread.
    pub tx: SyncSender<StackMsg>,
    join: OffCpuJoin,
    batch: Vec<RawStack>,
}

impl StackRoute {
    /// A route to the symboliser behind `tx`.
    pub fn new(tx: SyncSender<StackMsg>) -> StackRoute {
        StackRoute {
            tx,
            join: OffCpuJoin::default(),
            batch: Vec::new(),
        }
    }

    fn stack(&mut self, raw: RawStack) {
        if raw.kind == ingero_store::StackKind::OffCpu {
            if let Some(lost) = self.join.stack(raw) {
                self.batch.push(lost);
            }
        } else {
            self.batch.push(raw);
        }
    }

    fn host(&mut self, h: &ingero_store::HostEvent) {
        if let Some(done) = self.join.host(h) {
            self.batch.push(done);
        }
    }

    fn send(&mut self, msg: StackMsg) {
        let _ = self.tx.send(msg);
    }

    /// Sends the samples gathered; at the stop, the off-CPU stacks still
    /// waiting too (their threads never came back).
    fn flush(&mut self, stopping: bool) {
        if stopping {
            let rest = self.join.drain();
            self.batch.extend(rest);
        }
        if !self.batch.is_empty() {
            let b = std::mem::take(&mut self.batch);
            self.send(StackMsg::Raw(b));
        }
    }
}

/// Starts the poller. It stops after a final drain once `stop` is set.
#[allow(clippy::too_many_arguments)]
pub fn spawn(
    ring: RingBuf<MapData>,
    clock: Clock,
    cfg: PollerConfig,
    writer: SyncSender<WriterMsg>,
    notices: SyncSender<Notice>,
    stats: Arc<Mutex<LiveStats>>,
    stop: Arc<AtomicBool>,
    stacks: Option<StackRoute>,
) -> std::io::Result<JoinHandle<()>> {
    let poller = Poller {
        ring,
        clock,
        stats,
        routes: RecordRoutes {
            batch: Vec::with_capacity(CHUNK),
            seen: HashSet::new(),
            notices,
            writer,
            stacks,
        },
    };
    std::thread::Builder::new()
        .name("ingero-poller".into())
        .spawn(move || poller.run(&cfg, &stop))
}

/// The poller thread's state: the ring buffer it drains, the live
/// statistics it feeds, and where the decoded records go.
struct Poller {
    /// The kernel's ring buffer.
    ring: RingBuf<MapData>,
    /// Kernel to epoch time.
    clock: Clock,
    /// Live counters, updated once per chunk of records.
    stats: Arc<Mutex<LiveStats>>,
    /// Where each decoded record goes.
    routes: RecordRoutes,
}

/// Where decoded records go: the batch for the writer, the control
/// thread's notices, the symboliser; and which processes were seen.
struct RecordRoutes {
    /// Events waiting for the writer.
    batch: Vec<Event>,
    /// Processes seen in records so far.
    seen: HashSet<i32>,
    /// To the control thread.
    notices: SyncSender<Notice>,
    /// To the writer.
    writer: SyncSender<WriterMsg>,
    /// To the symboliser, when stacks are sampled.
    stacks: Option<StackRoute>,
}

/// The writer is gone (it failed, and the capture is stopping).
struct WriterGone;

impl Poller {
    /// The thread's loop: drain every poll interval, hand a batch to the
    /// writer every batch interval (or when it is full), stop after the
    /// drain that follows `stop`.
    fn run(mut self, cfg: &PollerConfig, stop: &AtomicBool) {
        let mut last_flush = Instant::now();
        loop {
            let stopping = stop.load(Ordering::Acquire);
            self.drain();
            if stopping
                || self.routes.batch.len() >= MAX_BATCH
                || last_flush.elapsed() >= cfg.batch_interval
            {
                if self.routes.flush(stopping).is_err() {
                    return;
                }
                last_flush = Instant::now();
            }
            if stopping {
                return;
            }
            std::thread::sleep(cfg.poll_interval);
        }
    }

    /// Decodes what the ring buffer holds, [`CHUNK`] records per lock of
    /// the statistics, handing a full batch to the writer between chunks.
    fn drain(&mut self) {
        loop {
            let Ok(mut st) = self.stats.lock() else {
                return;
            };
            let mut n = 0;
            while n < CHUNK {
                let Some(item) = self.ring.next() else { break };
                n += 1;
                let record = match decode(&item, &self.clock) {
                    Ok(r) => r,
                    Err(_) => {
                        st.losses.undecodable += 1;
                        continue;
                    }
                };
                if self.routes.route(record, &mut st).is_err() {
                    return;
                }
            }
            drop(st);
            if self.routes.batch.len() >= MAX_BATCH {
                let full = std::mem::replace(&mut self.routes.batch, Vec::with_capacity(CHUNK));
                if self.routes.writer.send(WriterMsg::Events(full)).is_err() {
                    return;
                }
            }
            if n < CHUNK {
                return;
            }
        }
    }
}

impl RecordRoutes {
    /// Counts one decoded record in `st` and sends it on: events to the
    /// batch, lifecycle facts to the control thread, stacks to the
    /// symboliser; a process seen for the first time is announced.
    fn route(&mut self, record: Record, st: &mut LiveStats) -> Result<(), WriterGone> {
        let (pid, ts) = match &record {
            Record::Cuda(c) | Record::Nccl(c, _) => (c.pid, c.ts_ns),
            Record::LaunchRun(r) => (r.pid, r.ts_ns),
            Record::CallFold(f) => (f.pid, f.ts_ns),
            Record::Host(h) | Record::Proc(h, _) => (h.pid, h.ts_ns),
            Record::Stack(s) => (s.pid, s.ts_ns),
            Record::MapExec { pid, ts_ns } => (*pid, *ts_ns),
        };
        if self.seen.insert(pid) {
            st.processes += 1;
            notify(&self.notices, st, Notice::Seen { pid, ts_ns: ts });
        }
        match record {
            Record::Cuda(c) => {
                st.add_cuda(&c);
                self.batch.push(Event::Cuda(c));
            }
            Record::LaunchRun(r) => {
                st.add_run(&r);
                self.batch.push(Event::LaunchRun(r));
            }
            Record::CallFold(f) => {
                st.add_fold(&f);
                self.batch.push(Event::CallFold(f));
            }
            Record::Nccl(c, n) => {
                st.add_cuda(&c);
                self.batch.push(Event::Cuda(c));
                if self.writer.send(WriterMsg::Nccl(vec![n])).is_err() {
                    return Err(WriterGone);
                }
            }
            Record::Host(h) => {
                st.add_host(&h);
                if let Some(s) = self.stacks.as_mut() {
                    s.host(&h);
                }
                self.batch.push(Event::Host(h));
            }
            Record::Stack(raw) => {
                if let Some(s) = self.stacks.as_mut() {
                    s.stack(raw);
                }
            }
            Record::Proc(h, comm) => {
                st.add_host(&h);
                let notice = self.lifecycle_notice(&h, comm);
                notify(&self.notices, st, notice);
                self.batch.push(Event::Host(h));
            }
            Record::MapExec { pid, .. } => {
                if let Some(s) = self.stacks.as_mut() {
                    s.send(StackMsg::Mapped(pid));
                }
                notify(&self.notices, st, Notice::Rescan { pid })
            }
        }
        Ok(())
    }

    /// The notice of a fork, exec or exit; an exec also tells the
    /// symboliser that the process's mappings changed.
    fn lifecycle_notice(&mut self, h: &HostEvent, comm: String) -> Notice {
        match h.kind {
            HostKind::Fork => Notice::Fork {
                parent: h.pid,
                child: h.arg as i32,
                comm,
                ts_ns: h.ts_ns,
            },
            HostKind::Exec => {
                if let Some(s) = self.stacks.as_mut() {
                    s.send(StackMsg::Exec(h.pid));
                }
                Notice::Exec {
                    pid: h.pid,
                    comm,
                    ts_ns: h.ts_ns,
                }
            }
            _ => Notice::Exit {
                pid: h.pid,
                ts_ns: h.ts_ns,
            },
        }
    }

    /// Hands the batch to the writer and the gathered stacks to the
    /// symboliser (at the stop, the off-CPU stacks still waiting too).
    fn flush(&mut self, stopping: bool) -> Result<(), WriterGone> {
        if !self.batch.is_empty() {
            let full = std::mem::replace(&mut self.batch, Vec::with_capacity(CHUNK));
            if self.writer.send(WriterMsg::Events(full)).is_err() {
                return Err(WriterGone);
            }
        }
        if let Some(s) = self.stacks.as_mut() {
            s.flush(stopping);
        }
        Ok(())
    }
}

fn notify(notices: &SyncSender<Notice>, stats: &mut LiveStats, n: Notice) {
    if let Err(TrySendError::Full(_)) = notices.try_send(n) {
        stats.losses.notices_dropped += 1;
    }
}
