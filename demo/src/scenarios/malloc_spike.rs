//! `periodic-malloc-spike`: a steady training loop whose per-step workspace
//! allocation is normally cheap, but every `PERIOD_STEPS` steps the caching
//! allocator runs out of room for a large activation buffer: the first
//! `cudaMalloc` fails slowly, the allocator synchronises the device and
//! releases cached segments, and the retried `cudaMalloc` maps fresh memory.
//! The spike recurs at a regular interval because the steps are regular.

use super::Built;
use crate::cuda;
use crate::host::{self, EPOCH_NS, MIB, MS, SEC, US};
use crate::rng::Rng;
use crate::sim::{Op, Pages, Sim, Start};
use std::collections::VecDeque;

/// Pid of the training process.
pub(crate) const MAIN_PID: i32 = 7001;
const SHELL_PID: i32 = 6950;

/// Steps between two allocator misses.
pub(crate) const PERIOD_STEPS: u64 = 160;

const KERNELS: u32 = 32;
const BATCH_BYTES: i64 = 8 * MIB;
const WORKSPACE_BYTES: i64 = 4 * MIB;
const BIG_BYTES: i64 = 1024 * MIB;
const SEGMENT_BYTES: i64 = 256 * MIB;

/// Sets up the scenario.
pub(crate) fn build(seed: u64, duration_s: u32) -> Built {
    let spec = host::host_spec(4, 32);
    let mut sim = Sim::new(spec, EPOCH_NS);
    let command = "python3 train.py --model gpt2-medium --batch-size 16 --seq-len 1024";
    let processes = vec![host::process(MAIN_PID, SHELL_PID, "python3", command)];
    let mut rng = Rng::new(seed, 1);
    let mut step: u64 = 0;
    let trainer = move |_: i64, out: &mut VecDeque<Op>| {
        step += 1;
        out.push_back(Op::Compute {
            ns: rng.skewed(2 * MS, 1.3),
            pages: Pages::new(2, 2),
        });
        out.push_back(Op::Cuda(cuda::upload_pinned(&mut rng, BATCH_BYTES)));
        let ws = rng.skewed(40 * US, 1.6);
        out.push_back(Op::Cuda(cuda::malloc(WORKSPACE_BYTES, ws, 0, 0, true)));
        for k in 0..KERNELS {
            if k == KERNELS / 2 && step.is_multiple_of(PERIOD_STEPS) {
                allocator_miss(&mut rng, out);
            }
            out.push_back(Op::Compute {
                ns: rng.skewed(16 * US, 2.0),
                pages: Pages::NONE,
            });
            let gpu = rng.skewed(700 * US, 1.5);
            out.push_back(Op::Cuda(cuda::launch(&mut rng, gpu, false)));
        }
        out.push_back(Op::Cuda(cuda::stream_sync()));
        let fr = rng.skewed(12 * US, 1.5);
        out.push_back(Op::Cuda(cuda::free(WORKSPACE_BYTES, fr, 0, true)));
        out.push_back(Op::Compute {
            ns: rng.skewed(250 * US, 1.5),
            pages: Pages::NONE,
        });
    };
    sim.spawn(MAIN_PID, MAIN_PID, Start::At(EPOCH_NS), Box::new(trainer));
    Built {
        sim,
        session: host::session(&spec, vec![MAIN_PID], command),
        processes,
        end_ns: EPOCH_NS + duration_s as i64 * SEC,
    }
}

/// The caching allocator's slow path: failed allocation, device-wide
/// synchronisation, release of cached segments, retry.
fn allocator_miss(rng: &mut Rng, out: &mut VecDeque<Op>) {
    let cpu = rng.range(150 * US, 300 * US);
    let block = rng.range(900 * US, 1_600 * US);
    out.push_back(Op::Cuda(cuda::malloc(
        BIG_BYTES,
        cpu,
        block,
        cuda::ERR_MEMORY_ALLOCATION,
        true,
    )));
    out.push_back(Op::Cuda(cuda::device_sync()));
    for _ in 0..3 {
        let cpu = rng.range(100 * US, 250 * US);
        let block = rng.range(400 * US, 800 * US);
        out.push_back(Op::Cuda(cuda::free(SEGMENT_BYTES, cpu, block, true)));
    }
    let cpu = rng.range(300 * US, 600 * US);
    let block = rng.range(1_500 * US, 3_000 * US);
    out.push_back(Op::Cuda(cuda::malloc(BIG_BYTES, cpu, block, 0, true)));
}
