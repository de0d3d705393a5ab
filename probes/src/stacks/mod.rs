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
use serde::Serialize;
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use symbolize::NativeSymbolizer;

/// Default on-CPU sampling rate (`ingero trace --stack-hz`): 99 per second,
/// off the round 100 so sampling does not beat with periodic work.
pub const DEFAULT_STACK_HZ: u32 = 99;

/// A stack sample as the kernel took it: addresses, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawStack {
    /// On-CPU or off-CPU.
    pub kind: StackKind,
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// CPU.
    pub cpu: i32,
    /// Epoch ns (off-CPU: the switch-out).
    pub ts_ns: i64,
    /// User-space return addresses (empty when the stack could not be walked).
    pub user: Vec<u64>,
    /// Kernel addresses (empty when the sample was taken in user mode).
    pub kernel: Vec<u64>,
    /// Negative errno of a user stack that could not be walked, else 0.
    pub user_error: i32,
    /// Off-CPU: how long the thread stayed off, filled by the join.
    pub off_cpu_ns: i64,
    /// Off-CPU: 1 preempted, 0 blocked (as the switch record says); else -1.
    pub state: i64,
}

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

/// Counters of the stack samplers, shown in the capture status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct StackStatus {
    /// On-CPU sampling rate (0 = off).
    pub hz: u32,
    /// CPUs with a sampling perf event.
    pub cpus: u32,
    /// On-CPU native samples resolved.
    pub on_cpu: u64,
    /// Off-CPU native samples resolved.
    pub off_cpu: u64,
    /// User stacks that could not be walked (recorded with no user frames).
    pub user_unwalked: u64,
    /// Native frames named.
    pub frames_resolved: u64,
    /// Native frames left as addresses.
    pub frames_unresolved: u64,
    /// CPU time the symboliser thread used, ns.
    pub symbolize_cpu_ns: u64,
    /// Python samples (one per thread per round).
    pub python: u64,
    /// Python processes the sampler attached to (over the whole capture).
    pub python_processes: u32,
    /// Sampling rounds that failed (a process read mid-update, or gone).
    pub python_errors: u64,
    /// CPU time the Python sampler thread used, ns.
    pub python_cpu_ns: u64,
    /// Why Python sampling is off or what it could not do, when it says.
    pub python_note: String,
}

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
                            s.symbolize_cpu_ns = crate::nvml::cost::thread_cpu_ns();
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
