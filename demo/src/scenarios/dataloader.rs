//! `dataloader-starvation`: a PyTorch-style training process whose DataLoader
//! workers are CPU-bound. The main thread waits for batches, and when it does
//! have work it competes for the cores with its own workers and pin-memory
//! thread, so its wake-ups queue behind them and its CUDA calls stretch.
//!
//! Data path: each worker builds whole batches (per sample: a short read,
//! then decoding that allocates pages; then collation) into a bounded
//! prefetch queue; the pin-memory thread copies batches in order into
//! page-locked memory; the main thread uploads each batch, launches the
//! step's kernels and synchronises.

use super::Built;
use crate::cuda;
use crate::host::{self, EPOCH_NS, MIB, MS, SEC, US};
use crate::rng::Rng;
use crate::sim::{ChanId, Op, Pages, Sim, Start};
use std::collections::VecDeque;

/// Pid of the training process (its main thread has the same tid).
pub(crate) const MAIN_PID: i32 = 4242;
/// Pid of the first DataLoader worker; the others follow.
pub(crate) const FIRST_WORKER_PID: i32 = 4260;
/// Pid of the shell the training was started from.
const SHELL_PID: i32 = 4017;

/// Size of the simulated setup (the demo and the large benchmark differ).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoaderParams {
    /// Host cores.
    pub cores: usize,
    /// Host memory, GiB.
    pub mem_gib: i64,
    /// DataLoader worker processes.
    pub workers: u32,
    /// Samples per batch.
    pub samples: u32,
    /// Median CPU time to decode and augment one sample.
    pub decode_ns: i64,
    /// Kernels launched per training step.
    pub kernels: u32,
    /// Median device time of one kernel.
    pub kernel_ns: i64,
}

impl LoaderParams {
    /// The demo: 4 workers on 4 cores.
    pub fn demo() -> LoaderParams {
        LoaderParams {
            cores: 4,
            mem_gib: 32,
            workers: 4,
            samples: 32,
            decode_ns: 4_300 * US,
            kernels: 30,
            kernel_ns: 900 * US,
        }
    }
}

/// Bytes of one collated sample: an RGB 224x224 fp32 image.
const SAMPLE_BYTES: i64 = 3 * 224 * 224 * 4;

/// Host memcpy rate of the pin-memory thread, bytes per second.
const PIN_COPY_BW: i64 = 8_000_000_000;

/// Sets up the demo scenario.
pub(crate) fn build(seed: u64, duration_s: u32) -> Built {
    build_with(
        &LoaderParams::demo(),
        seed,
        EPOCH_NS + duration_s as i64 * SEC,
    )
}

/// Sets up the mechanism with `p`, capturing until `end_ns`.
pub(crate) fn build_with(p: &LoaderParams, seed: u64, end_ns: i64) -> Built {
    let spec = host::host_spec(p.cores, p.mem_gib);
    let mut sim = Sim::new(spec, EPOCH_NS);
    let command = format!(
        "python3 train.py --model resnet50 --batch-size {} --num-workers {} --pin-memory",
        p.samples, p.workers
    );
    let mut processes = vec![host::process(MAIN_PID, SHELL_PID, "python3", &command)];
    let mut ready: Vec<ChanId> = Vec::new();
    let mut slots: Vec<ChanId> = Vec::new();
    for w in 0..p.workers {
        let pid = FIRST_WORKER_PID + w as i32;
        ready.push(sim.add_chan(0));
        slots.push(sim.add_chan(2));
        processes.push(host::process(pid, MAIN_PID, "pt_data_worker", &command));
        let program = worker(
            *p,
            Rng::new(seed, 100 + w as u64),
            slots[w as usize],
            ready[w as usize],
        );
        sim.spawn(pid, pid, Start::OnFork, Box::new(program));
    }
    let pinned = sim.add_chan(0);
    let batch_bytes = SAMPLE_BYTES * p.samples as i64;
    let pin = pin_thread(p.workers, batch_bytes, ready.clone(), slots.clone(), pinned);
    sim.spawn(MAIN_PID, MAIN_PID + 1, Start::At(EPOCH_NS), Box::new(pin));
    let main = main_thread(*p, Rng::new(seed, 1), pinned);
    sim.spawn(MAIN_PID, MAIN_PID, Start::At(EPOCH_NS), Box::new(main));
    Built {
        sim,
        session: host::session(&spec, vec![MAIN_PID], &command),
        processes,
        end_ns,
    }
}

/// One DataLoader worker: take an index request, build the batch, hand it over.
fn worker(
    p: LoaderParams,
    mut rng: Rng,
    slot: ChanId,
    ready: ChanId,
) -> impl FnMut(i64, &mut VecDeque<Op>) {
    move |_, out| {
        out.push_back(Op::Take(slot));
        for _ in 0..p.samples {
            out.push_back(Op::Sleep(rng.range(60 * US, 250 * US)));
            out.push_back(Op::Compute {
                ns: rng.skewed(p.decode_ns, 2.0),
                pages: Pages::new(rng.range(0, 3) as u8, 1),
            });
        }
        out.push_back(Op::Compute {
            ns: rng.jitter(2 * MS, 0.2),
            pages: Pages::new(4, 6),
        });
        out.push_back(Op::Put(ready));
    }
}

/// The pin-memory thread: batches in worker order, copied to page-locked memory.
fn pin_thread(
    workers: u32,
    batch_bytes: i64,
    ready: Vec<ChanId>,
    slots: Vec<ChanId>,
    pinned: ChanId,
) -> impl FnMut(i64, &mut VecDeque<Op>) {
    let mut next = 0usize;
    move |_, out| {
        let w = next % workers as usize;
        next += 1;
        out.push_back(Op::Take(ready[w]));
        out.push_back(Op::Compute {
            ns: crate::gpu::transfer_ns(batch_bytes, PIN_COPY_BW),
            pages: Pages::NONE,
        });
        out.push_back(Op::Put(slots[w]));
        out.push_back(Op::Put(pinned));
    }
}

/// The training loop on the main thread.
fn main_thread(
    p: LoaderParams,
    mut rng: Rng,
    pinned: ChanId,
) -> impl FnMut(i64, &mut VecDeque<Op>) {
    let mut forked = false;
    move |_, out| {
        if !forked {
            // Epoch start: the DataLoader iterator forks its workers.
            forked = true;
            for w in 0..p.workers {
                out.push_back(Op::Compute {
                    ns: rng.jitter(3 * MS, 0.3),
                    pages: Pages::new(0, 4),
                });
                out.push_back(Op::Fork(FIRST_WORKER_PID + w as i32));
            }
            return;
        }
        out.push_back(Op::Take(pinned));
        out.push_back(Op::Compute {
            ns: rng.skewed(350 * US, 1.5),
            pages: Pages::NONE,
        });
        out.push_back(Op::Cuda(cuda::upload_pinned(
            &mut rng,
            SAMPLE_BYTES * p.samples as i64,
        )));
        for _ in 0..p.kernels {
            out.push_back(Op::Compute {
                ns: rng.skewed(18 * US, 2.0),
                pages: Pages::NONE,
            });
            let gpu = rng.skewed(p.kernel_ns, 1.6);
            out.push_back(Op::Cuda(cuda::launch(&mut rng, gpu, false)));
        }
        out.push_back(Op::Cuda(cuda::stream_sync()));
        out.push_back(Op::Compute {
            ns: rng.skewed(250 * US, 1.5),
            pages: Pages::NONE,
        });
        // Decoded sample buffers of the consumed batch are freed.
        out.push_back(Op::Release(MIB));
    }
}
