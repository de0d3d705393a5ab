//! Per-thread scheduler state.

use super::op::{CudaSpec, Op, Pages, Program};
use std::collections::VecDeque;

/// When a thread first becomes runnable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// At this simulated time (threads of a process that already exists).
    At(i64),
    /// When some thread performs [`Op::Fork`] with this thread's pid.
    OnFork,
}

/// Where a thread is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// Waiting for its start time or its fork.
    NotStarted,
    /// Runnable, in the run queue.
    Ready,
    /// On this core.
    Running(usize),
    /// Sleeping on a timer or a channel.
    Blocked,
    /// Exited.
    Done,
}

/// A CPU burst in progress.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Burst {
    pub total: i64,
    pub left: i64,
    pub pages: Pages,
    pub emitted: u32,
}

impl Burst {
    pub fn new(ns: i64, pages: Pages) -> Burst {
        Burst {
            total: ns,
            left: ns,
            pages,
            emitted: 0,
        }
    }
}

/// A CUDA call in progress: its spec, entry time and current phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call {
    pub spec: CudaSpec,
    pub entry: i64,
    pub phase: Phase,
}

/// Phases of a CUDA call, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Entry,
    Block,
    Device,
    Tail,
    Return,
}

/// A simulated thread.
pub(crate) struct Thread {
    pub pid: i32,
    pub tid: i32,
    pub state: State,
    pub start: Start,
    pub program: Box<dyn Program>,
    pub ops: VecDeque<Op>,
    pub burst: Option<Burst>,
    pub call: Option<Call>,
    /// CPU time left before the thread must offer its core to a waiter.
    pub quantum_left: i64,
    /// Switch-out time and core, while off-CPU after having run.
    pub off_since: Option<(i64, i32, bool)>,
    /// Generation of the latest timer wake-up, to drop stale ones.
    pub wake_gen: u64,
}
