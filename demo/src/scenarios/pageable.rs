//! `pageable-memcpy`: every step uploads a large batch (64-256 MiB) with
//! `cudaMemcpyAsync` from ordinary pageable memory. The driver has to stage
//! it through a page-locked bounce buffer on the calling thread, faulting in
//! the source pages as it goes, so the "asynchronous" call blocks for the
//! whole transfer at a few GB/s while the GPU waits. No page-locked memory
//! is ever allocated by the process.

use super::Built;
use crate::cuda;
use crate::host::{self, EPOCH_NS, MIB, MS, SEC, US};
use crate::rng::Rng;
use crate::sim::{Op, Pages, Sim, Start};
use std::collections::VecDeque;

/// Pid of the training process.
pub(crate) const MAIN_PID: i32 = 6310;
const SHELL_PID: i32 = 6200;

/// Batch sizes the loop uploads (variable-length inputs).
const BATCH_MIB: [i64; 5] = [64, 96, 128, 192, 256];

/// Sets up the scenario.
pub(crate) fn build(seed: u64, duration_s: u32) -> Built {
    let spec = host::host_spec(4, 64);
    let mut sim = Sim::new(spec, EPOCH_NS);
    let command = "python3 train_video.py --clip-frames 64 --batch-size 8";
    let processes = vec![host::process(MAIN_PID, SHELL_PID, "python3", command)];
    let mut rng = Rng::new(seed, 1);
    let trainer = move |_: i64, out: &mut VecDeque<Op>| {
        let bytes = rng.pick(&BATCH_MIB) * MIB;
        out.push_back(Op::Compute {
            ns: rng.skewed(4 * MS, 1.3),
            pages: Pages::new(0, 3),
        });
        out.push_back(Op::Cuda(cuda::upload_pageable(&mut rng, bytes)));
        for _ in 0..20 {
            out.push_back(Op::Compute {
                ns: rng.skewed(20 * US, 2.0),
                pages: Pages::NONE,
            });
            let gpu = rng.skewed(1_500 * US, 1.5);
            out.push_back(Op::Cuda(cuda::launch(&mut rng, gpu, false)));
        }
        out.push_back(Op::Cuda(cuda::stream_sync()));
        out.push_back(Op::Compute {
            ns: rng.skewed(300 * US, 1.5),
            pages: Pages::NONE,
        });
        // The batch buffer is dropped after the step.
        out.push_back(Op::Release(bytes));
    };
    sim.spawn(MAIN_PID, MAIN_PID, Start::At(EPOCH_NS), Box::new(trainer));
    Built {
        sim,
        session: host::session(&spec, vec![MAIN_PID], command),
        processes,
        end_ns: EPOCH_NS + duration_s as i64 * SEC,
    }
}
