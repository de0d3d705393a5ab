//! Stack samples: what a traced thread was running (on-CPU samples from a
//! CPU-clock perf event), where a CUDA-calling thread blocked (its stack at
//! switch-out, joined with how long it stayed off), and the Python frames
//! of traced interpreters ([`python`]).
//!
//! Path of a native sample: the kernel program (`bpf/stacks.h`) puts user
//! and kernel addresses in the ring buffer; the poller decodes them into a
//! [`RawStack`] and, for an off-CPU one, waits for the switch record of the
//! same interval ([`route::OffCpuJoin`]); the symboliser thread
//! ([`spawn_symbolizer`]) names the frames ([`symbolize`]) and hands
//! [`ingero_store::StackSample`]s to the writer.

pub mod maps;
pub mod python;
pub mod route;
pub mod symbolize;

use crate::writer::WriterMsg;
use ingero_store::{StackKind, StackSample};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use symbolize::NativeSymbolizer;

// Reachable here too, where callers first found them.
pub use crate::config::DEFAULT_STACK_HZ;
pub use crate::decode::RawStack;

/// What the poller hands to the symboliser thread.
#[derive(Debug)]
pub enum StackMsg {
    /// Samples to resolve and store.
    Raw(Vec<RawStack>),
    /// A traced process called exec: its mappings changed.
    Exec(i32),
    /// A traced process mapped new code.
    Mapped(i32),
}

pub use crate::status::StackStatus;

/// Largest batch of resolved samples sent to the writer at once.
const BATCH: usize = 4096;
/// Resolved samples wait at most this long before they are sent.
const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Starts the symboliser thread. It ends once every sender of `rx` is gone
/// (the poller stopped), after sending what it holds.
pub(crate) fn spawn_symbolizer(
    rx: Receiver<StackMsg>,
    writer: SyncSender<WriterMsg>,
    status: Arc<Mutex<StackStatus>>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("ingero-stacks".into())
        .spawn(move || {
            let mut sym = NativeSymbolizer::new();
            // At the thread's normal priority: a lowered one (SCHED_IDLE,
            // nice 10) left the read unfinished at the stop of a capture on
            // a busy host, and the stop waited for it.
            sym.warm_kernel();
            let mut out: Vec<StackSample> = Vec::new();
            let mut last = Instant::now();
            loop {
                let msg = rx.recv_timeout(FLUSH_EVERY);
                let done = matches!(msg, Err(std::sync::mpsc::RecvTimeoutError::Disconnected));
                match msg {
                    Ok(StackMsg::Raw(batch)) => {
                        let mut on = 0;
                        let mut off = 0;
                        let mut unwalked = 0;
                        for raw in &batch {
                            match raw.kind {
                                StackKind::OffCpu => off += 1,
                                _ => on += 1,
                            }
                            if raw.user_error != 0 {
                                unwalked += 1;
                            }
                            out.push(StackSample {
                                ts_ns: raw.ts_ns,
                                pid: raw.pid,
                                tid: raw.tid,
                                cpu: raw.cpu,
                                kind: raw.kind,
                                off_cpu_ns: raw.off_cpu_ns,
                                state: raw.state,
                                frames: sym.resolve(raw),
                            });
                        }
                        if let Ok(mut s) = status.lock() {
                            s.on_cpu += on;
                            s.off_cpu += off;
                            s.user_unwalked += unwalked;
                            s.frames_resolved = sym.stats.resolved;
                            s.frames_unresolved = sym.stats.unresolved;
                            s.symbolize_cpu_ns = crate::thread_cpu::thread_cpu_ns();
                        }
                    }
                    Ok(StackMsg::Exec(pid)) => sym.exec(pid),
                    Ok(StackMsg::Mapped(pid)) => sym.remap(pid),
                    Err(_) => {}
                }
                if !out.is_empty() && (done || out.len() >= BATCH || last.elapsed() >= FLUSH_EVERY)
                {
                    let batch = std::mem::take(&mut out);
                    if writer.send(WriterMsg::Stacks(batch)).is_err() {
                        return;
                    }
                    last = Instant::now();
                }
                if done {
                    return;
                }
            }
        })
}
