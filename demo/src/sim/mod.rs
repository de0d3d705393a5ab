//! A deterministic discrete-event simulation of a small host: N cores, one
//! round-robin run queue with a time quantum, threads that compute, sleep,
//! exchange tokens and call CUDA, and one GPU engine.
//!
//! Everything the demo databases show is measured on this model rather than
//! drawn from distributions: a `sched_switch` is recorded whenever a thread
//! leaves a core (its off-CPU time is filled in when it next runs), a CUDA
//! call lasts from its entry until the thread, having done the call's work,
//! is back on a core to return, and CPU% is the cores' busy time per second.
//!
//! The quantum is a per-thread CPU budget that sleeping does not refill: a
//! thread that used it up while others wait is sent to the back of the queue,
//! which approximates a fair scheduler without modelling virtual runtime.

mod chan;
pub mod op;
mod stats;
mod thread;

pub use op::{ChanId, CudaSpec, Op, Pages, Program};
pub use stats::HostSpec;
pub use thread::Start;

use crate::gpu::Gpu;
use chan::Chan;
use ingero_store::{CudaCall, Event, HostEvent, HostKind, SystemSnapshot};
use stats::Stats;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use thread::{Burst, Call, Phase, State, Thread};

/// Interval between system snapshots.
const SAMPLE_NS: i64 = 1_000_000_000;

/// `sched_switch` arg: the thread was preempted while runnable (see `HostKind::SchedSwitch`).
pub const SWITCH_PREEMPTED: i64 = 1;
/// `sched_switch` arg: the thread blocked by itself (went to sleep).
pub const SWITCH_SLEEP: i64 = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The segment the core's thread is running ends (burst done or quantum used).
    Core { core: usize, gen: u64 },
    /// A sleeping (or not yet started) thread's timer fires.
    Wake { thread: usize, gen: u64 },
    /// Take a system snapshot.
    Sample,
}

#[derive(Debug, Clone, Copy, Default)]
struct Core {
    running: Option<usize>,
    gen: u64,
    seg_start: i64,
}

/// The simulated host, its threads and its GPU.
pub struct Sim {
    spec: HostSpec,
    now: i64,
    cores: Vec<Core>,
    threads: Vec<Thread>,
    runq: VecDeque<usize>,
    heap: BinaryHeap<Reverse<(i64, u64, Ev)>>,
    seq: u64,
    chans: Vec<Chan>,
    gpu: Gpu,
    stats: Stats,
    events: Vec<Event>,
    snapshots: Vec<SystemSnapshot>,
    started: BTreeMap<i32, i64>,
}

impl Sim {
    /// An idle host described by `spec`, with the clock at `start_ns`.
    pub fn new(spec: HostSpec, start_ns: i64) -> Sim {
        let mut sim = Sim {
            spec,
            now: start_ns,
            cores: vec![Core::default(); spec.cores.max(1)],
            threads: Vec::new(),
            runq: VecDeque::new(),
            heap: BinaryHeap::new(),
            seq: 0,
            chans: Vec::new(),
            gpu: Gpu::default(),
            stats: Stats::new(&spec, start_ns),
            events: Vec::new(),
            snapshots: Vec::new(),
            started: BTreeMap::new(),
        };
        sim.push(start_ns + SAMPLE_NS, Ev::Sample);
        sim
    }

    /// Adds a channel holding `tokens` initially.
    pub fn add_chan(&mut self, tokens: u32) -> ChanId {
        self.chans.push(Chan::with_tokens(tokens));
        self.chans.len() - 1
    }

    /// Adds a thread running `program`.
    pub fn spawn(&mut self, pid: i32, tid: i32, start: Start, program: Box<dyn Program>) {
        let idx = self.threads.len();
        self.threads.push(Thread {
            pid,
            tid,
            state: State::NotStarted,
            start,
            program,
            ops: VecDeque::new(),
            burst: None,
            call: None,
            quantum_left: self.spec.quantum_ns,
            off_since: None,
            wake_gen: 0,
        });
        if let Start::At(t) = start {
            self.push(
                t.max(self.now),
                Ev::Wake {
                    thread: idx,
                    gen: 0,
                },
            );
        }
    }

    /// Time the device has spent (or is committed to spend) executing work.
    pub fn gpu_busy_ns(&self) -> i64 {
        self.gpu.busy_total()
    }

    /// The device's stretches of work, per process, in time order.
    pub fn gpu_busy(&self) -> &[crate::gpu::Busy] {
        self.gpu.busy()
    }

    /// When the first thread of each process became runnable.
    pub fn process_starts(&self) -> &BTreeMap<i32, i64> {
        &self.started
    }

    /// Events recorded so far and not yet taken, in the order they were completed.
    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    /// Number of events waiting to be taken.
    pub fn pending_events(&self) -> usize {
        self.events.len()
    }

    /// Snapshots taken so far and not yet taken.
    pub fn take_snapshots(&mut self) -> Vec<SystemSnapshot> {
        std::mem::take(&mut self.snapshots)
    }

    /// Runs the simulation up to and including time `t`.
    pub fn run_until(&mut self, t: i64) {
        while let Some(Reverse((at, _, _))) = self.heap.peek() {
            if *at > t {
                break;
            }
            let Some(Reverse((at, _, ev))) = self.heap.pop() else {
                break;
            };
            self.advance_to(at);
            match ev {
                Ev::Core { core, gen } => {
                    if self.cores[core].gen == gen {
                        self.segment_done(core);
                    }
                }
                Ev::Wake { thread, gen } => {
                    let th = &self.threads[thread];
                    let due = match th.state {
                        State::NotStarted => th.start != Start::OnFork,
                        State::Blocked => th.wake_gen == gen,
                        _ => false,
                    };
                    if due {
                        self.make_ready(thread);
                    }
                }
                Ev::Sample => {
                    let runnable = self.runq.len() + self.running_cores();
                    let snap = self.stats.sample(&self.spec, self.now, runnable);
                    self.snapshots.push(snap);
                    self.push(self.now + SAMPLE_NS, Ev::Sample);
                }
            }
            self.fill_idle_cores();
        }
        self.advance_to(t);
    }

    /// Ends the simulation at the current time: threads still off-CPU get
    /// their pending `sched_switch` with the off-CPU time seen so far.
    pub fn close(&mut self) {
        let now = self.now;
        for i in 0..self.threads.len() {
            let th = &mut self.threads[i];
            if let Some((ts, cpu, slept)) = th.off_since.take() {
                let ev = switch_event(th, ts, cpu, slept, now);
                self.events.push(ev);
            }
        }
    }

    fn push(&mut self, at: i64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    fn running_cores(&self) -> usize {
        self.cores.iter().filter(|c| c.running.is_some()).count()
    }

    fn advance_to(&mut self, t: i64) {
        if t > self.now {
            self.stats.busy_ns += self.running_cores() as i64 * (t - self.now);
            self.now = t;
        }
    }

    fn make_ready(&mut self, t: usize) {
        let th = &mut self.threads[t];
        if th.state == State::NotStarted {
            self.started.entry(th.pid).or_insert(self.now);
        }
        th.state = State::Ready;
        self.runq.push_back(t);
    }

    fn fill_idle_cores(&mut self) {
        loop {
            let Some(core) = self.cores.iter().position(|c| c.running.is_none()) else {
                return;
            };
            let Some(t) = self.runq.pop_front() else {
                return;
            };
            self.dispatch(t, core);
        }
    }

    fn dispatch(&mut self, t: usize, core: usize) {
        let now = self.now;
        let th = &mut self.threads[t];
        if let Some((ts, cpu, slept)) = th.off_since.take() {
            let ev = switch_event(th, ts, cpu, slept, now);
            self.events.push(ev);
        }
        th.state = State::Running(core);
        let c = &mut self.cores[core];
        c.running = Some(t);
        c.gen += 1;
        self.run_thread(t, core);
    }

    /// Takes `t` off `core`; `slept` says whether it blocked (or was preempted).
    fn switch_out(&mut self, t: usize, core: usize, slept: bool) {
        let th = &mut self.threads[t];
        th.off_since = Some((self.now, core as i32, slept));
        let c = &mut self.cores[core];
        c.running = None;
        c.gen += 1;
    }

    fn block_until(&mut self, t: usize, core: usize, at: i64) {
        let th = &mut self.threads[t];
        th.state = State::Blocked;
        th.wake_gen += 1;
        let gen = th.wake_gen;
        self.switch_out(t, core, true);
        self.push(at, Ev::Wake { thread: t, gen });
    }

    /// The running segment on `core` ended: account the CPU time, emit the
    /// page allocations it covered, and decide whether the thread keeps the core.
    fn segment_done(&mut self, core: usize) {
        let Some(t) = self.cores[core].running else {
            return;
        };
        let ran = self.now - self.cores[core].seg_start;
        self.progress_burst(t, core, ran);
        let th = &mut self.threads[t];
        th.quantum_left -= ran;
        if th.quantum_left <= 0 {
            th.quantum_left = self.spec.quantum_ns;
            if !self.runq.is_empty() {
                th.state = State::Ready;
                self.switch_out(t, core, false);
                self.runq.push_back(t);
                return;
            }
        }
        self.run_thread(t, core);
    }

    fn progress_burst(&mut self, t: usize, core: usize, ran: i64) {
        let seg_start = self.cores[core].seg_start;
        let th = &mut self.threads[t];
        let Some(b) = th.burst.as_mut() else {
            return;
        };
        let before = b.total - b.left;
        let after = (before + ran).min(b.total);
        while b.emitted < b.pages.count {
            let pos =
                (b.total as i128 * (b.emitted as i128 + 1) / (b.pages.count as i128 + 1)) as i64;
            if pos > after {
                break;
            }
            b.emitted += 1;
            let ts = seg_start + (pos - before).max(0);
            self.stats.mem_used += b.pages.bytes_each();
            self.events.push(Event::Host(HostEvent {
                ts_ns: ts,
                pid: th.pid,
                tid: th.tid,
                kind: HostKind::PageAlloc,
                dur_ns: 0,
                arg: b.pages.order as i64,
                cpu: core as i32,
                count: 1,
                bytes: b.pages.bytes_each(),
            }));
        }
        b.left = b.total - after;
        if b.left <= 0 {
            th.burst = None;
        }
    }

    /// Lets the thread on `core` proceed at the current instant until it
    /// needs CPU time (a segment is scheduled) or leaves the core.
    fn run_thread(&mut self, t: usize, core: usize) {
        loop {
            if let Some(b) = self.threads[t].burst {
                let quantum = self.threads[t].quantum_left;
                let c = &mut self.cores[core];
                c.seg_start = self.now;
                let gen = c.gen;
                self.push(self.now + b.left.min(quantum), Ev::Core { core, gen });
                return;
            }
            if self.threads[t].call.is_some() {
                if self.step_call(t, core) {
                    continue;
                }
                return;
            }
            let th = &mut self.threads[t];
            if th.ops.is_empty() {
                th.program.plan(self.now, &mut th.ops);
            }
            let op = th.ops.pop_front().unwrap_or(Op::Exit);
            match op {
                Op::Compute { ns, pages } => self.start_burst(t, core, ns, pages),
                Op::Sleep(ns) => {
                    let at = self.now + ns.max(0);
                    self.block_until(t, core, at);
                    return;
                }
                Op::Take(ch) => {
                    let chan = &mut self.chans[ch];
                    if chan.tokens > 0 {
                        chan.tokens -= 1;
                    } else {
                        chan.waiters.push_back(t);
                        self.threads[t].state = State::Blocked;
                        self.switch_out(t, core, true);
                        return;
                    }
                }
                Op::Put(ch) => {
                    if let Some(w) = self.chans[ch].waiters.pop_front() {
                        self.make_ready(w);
                    } else {
                        self.chans[ch].tokens += 1;
                    }
                }
                Op::Cuda(spec) => {
                    self.threads[t].call = Some(Call {
                        spec,
                        entry: self.now,
                        phase: Phase::Entry,
                    });
                }
                Op::Fork(child) => self.fork(t, core, child),
                Op::Release(bytes) => self.stats.mem_used -= bytes,
                Op::Exit => {
                    self.threads[t].state = State::Done;
                    let c = &mut self.cores[core];
                    c.running = None;
                    c.gen += 1;
                    return;
                }
            }
        }
    }

    fn start_burst(&mut self, t: usize, core: usize, ns: i64, pages: Pages) {
        self.threads[t].burst = Some(Burst::new(ns.max(1), pages));
        if ns <= 0 {
            // Instant page allocations: account them right away.
            self.cores[core].seg_start = self.now;
            self.progress_burst(t, core, 1);
        }
    }

    fn fork(&mut self, t: usize, core: usize, child: i32) {
        let (pid, tid) = (self.threads[t].pid, self.threads[t].tid);
        self.events.push(Event::Host(HostEvent {
            ts_ns: self.now,
            pid,
            tid,
            kind: HostKind::Fork,
            dur_ns: 0,
            arg: child as i64,
            cpu: core as i32,
            count: 1,
            bytes: 0,
        }));
        for i in 0..self.threads.len() {
            let th = &self.threads[i];
            if th.pid == child && th.state == State::NotStarted && th.start == Start::OnFork {
                self.make_ready(i);
            }
        }
    }

    /// Advances the thread's CUDA call by one phase; false when the thread left the core.
    fn step_call(&mut self, t: usize, core: usize) -> bool {
        let Some(call) = self.threads[t].call else {
            return true;
        };
        let s = call.spec;
        let next = |phase: Phase, th: &mut Thread| {
            if let Some(c) = th.call.as_mut() {
                c.phase = phase;
            }
        };
        match call.phase {
            Phase::Entry => {
                next(Phase::Block, &mut self.threads[t]);
                if s.cpu_ns > 0 {
                    self.start_burst(t, core, s.cpu_ns, s.pages);
                }
                true
            }
            Phase::Block => {
                next(Phase::Device, &mut self.threads[t]);
                if s.block_ns > 0 {
                    let at = self.now + s.block_ns;
                    self.block_until(t, core, at);
                    return false;
                }
                true
            }
            Phase::Device => {
                next(Phase::Tail, &mut self.threads[t]);
                if s.gpu_ns > 0 {
                    let pid = self.threads[t].pid;
                    self.gpu.enqueue_for(self.now, s.gpu_ns, pid);
                }
                if s.wait_gpu && self.gpu.drained_at() > self.now {
                    let at = self.gpu.drained_at();
                    self.block_until(t, core, at);
                    return false;
                }
                true
            }
            Phase::Tail => {
                next(Phase::Return, &mut self.threads[t]);
                if s.tail_cpu_ns > 0 {
                    self.start_burst(t, core, s.tail_cpu_ns, Pages::NONE);
                }
                true
            }
            Phase::Return => {
                let th = &mut self.threads[t];
                th.call = None;
                let dur = (self.now - call.entry).max(1);
                let outer = CudaCall {
                    ts_ns: call.entry,
                    pid: th.pid,
                    tid: th.tid,
                    op_id: s.op_id,
                    dur_ns: dur,
                    bytes: s.bytes,
                    copy_kind: s.copy_kind,
                    stream: s.stream,
                    ret: s.ret,
                    ..CudaCall::default()
                };
                self.events.push(Event::Cuda(outer));
                if s.nested_op_id != 0 {
                    let inset = (dur / 8).min(400);
                    self.events.push(Event::Cuda(CudaCall {
                        ts_ns: call.entry + inset,
                        op_id: s.nested_op_id,
                        dur_ns: (dur - 2 * inset).max(1),
                        nested: true,
                        ..outer
                    }));
                }
                true
            }
        }
    }
}

fn switch_event(th: &Thread, ts: i64, cpu: i32, slept: bool, now: i64) -> Event {
    Event::Host(HostEvent {
        ts_ns: ts,
        pid: th.pid,
        tid: th.tid,
        kind: HostKind::SchedSwitch,
        dur_ns: (now - ts).max(0),
        arg: if slept {
            SWITCH_SLEEP
        } else {
            SWITCH_PREEMPTED
        },
        cpu,
        count: 1,
        bytes: 0,
    })
}

#[cfg(test)]
mod tests;
