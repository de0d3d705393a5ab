//! `cold-start`: the capture begins as the training script starts. The first
//! `cudaMalloc` creates the CUDA context (driver initialisation: host work,
//! page allocations, waiting on the device), parameters are allocated and
//! initialised on the device, and the first launch of every kernel loads its
//! module lazily. After that the loop runs fast and steady.

use super::Built;
use crate::cuda;
use crate::host::{self, EPOCH_NS, MIB, MS, SEC, US};
use crate::rng::Rng;
use crate::sim::{Op, Pages, Sim, Start};
use std::collections::VecDeque;

/// Pid of the training process.
pub(crate) const MAIN_PID: i32 = 8150;
const SHELL_PID: i32 = 8100;

/// Distinct kernels in one training step.
const STEP_KERNELS: usize = 16;
/// Distinct kernels that initialise the parameters.
const INIT_KERNELS: usize = 3;
/// Parameter tensors allocated at start.
const PARAMS: usize = 12;

/// Sets up the scenario.
pub(crate) fn build(seed: u64, duration_s: u32) -> Built {
    let spec = host::host_spec(4, 32);
    let mut sim = Sim::new(spec, EPOCH_NS);
    let command = "python3 finetune.py --model vit-base --batch-size 64";
    let processes = vec![host::process(MAIN_PID, SHELL_PID, "python3", command)];
    let mut rng = Rng::new(seed, 1);
    let mut loaded = [false; INIT_KERNELS + STEP_KERNELS];
    let mut started = false;
    let trainer = move |_: i64, out: &mut VecDeque<Op>| {
        let mut launch = |rng: &mut Rng, out: &mut VecDeque<Op>, kernel: usize, gpu: i64| {
            let spec = if loaded[kernel] {
                cuda::launch(rng, gpu, true)
            } else {
                loaded[kernel] = true;
                cuda::first_launch(rng, gpu, true)
            };
            out.push_back(Op::Cuda(spec));
        };
        if !started {
            started = true;
            // Interpreter start and `import torch`.
            out.push_back(Op::Compute {
                ns: rng.jitter(900 * MS, 0.1),
                pages: Pages::new(4, 60),
            });
            // First CUDA call: context creation.
            let cpu = rng.jitter(380 * MS, 0.1);
            let mut init = cuda::malloc(2 * MIB, cpu, rng.jitter(520 * MS, 0.1), 0, true);
            init.pages = Pages::new(0, 120);
            out.push_back(Op::Cuda(init));
            for _ in 0..PARAMS {
                let bytes = rng.range(8, 96) * MIB;
                let cpu = rng.skewed(60 * US, 1.5);
                out.push_back(Op::Cuda(cuda::malloc(bytes, cpu, 0, 0, true)));
                for k in 0..INIT_KERNELS {
                    let gpu = rng.range(40 * US, 200 * US);
                    launch(&mut rng, out, k, gpu);
                }
            }
            out.push_back(Op::Cuda(cuda::device_sync()));
            return;
        }
        out.push_back(Op::Compute {
            ns: rng.skewed(600 * US, 1.3),
            pages: Pages::NONE,
        });
        for k in 0..STEP_KERNELS {
            out.push_back(Op::Compute {
                ns: rng.skewed(15 * US, 2.0),
                pages: Pages::NONE,
            });
            let gpu = rng.skewed(1_100 * US, 1.4);
            launch(&mut rng, out, INIT_KERNELS + k, gpu);
        }
        out.push_back(Op::Cuda(cuda::stream_sync()));
        out.push_back(Op::Compute {
            ns: rng.skewed(200 * US, 1.5),
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
