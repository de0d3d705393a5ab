//! `cpu-contention`: a training process with no helpers of its own shares a
//! 4-core host with unrelated CPU-bound programs (a `stress-ng` run with four
//! workers and a two-threaded `ffmpeg` transcode). The training thread's
//! wake-ups wait behind the hogs in the run queue and it is preempted when
//! its quantum runs out, so launches and synchronisations stretch.

use super::Built;
use crate::cuda;
use crate::host::{self, EPOCH_NS, MIB, MS, SEC, US};
use crate::rng::Rng;
use crate::sim::{Op, Pages, Sim, Start};
use std::collections::VecDeque;

/// Pid of the training process.
pub(crate) const MAIN_PID: i32 = 5120;
const SHELL_PID: i32 = 5010;
const STRESS_PID: i32 = 3301;
const STRESS_WORKERS: i32 = 4;
const FFMPEG_PID: i32 = 3420;
const OTHER_SHELL_PID: i32 = 2990;

/// Bytes uploaded per step.
const BATCH_BYTES: i64 = 12 * MIB;

/// Sets up the scenario.
pub(crate) fn build(seed: u64, duration_s: u32) -> Built {
    let spec = host::host_spec(4, 32);
    let mut sim = Sim::new(spec, EPOCH_NS);
    let command = "python3 train.py --model bert-base --batch-size 32";
    let stress_cmd = "stress-ng --cpu 4 --timeout 600s";
    let ffmpeg_cmd = "ffmpeg -i input.mp4 -c:v libx264 -preset medium -threads 2 out.mp4";
    let mut processes = vec![
        host::process(MAIN_PID, SHELL_PID, "python3", command),
        host::process(STRESS_PID, 1, "stress-ng", stress_cmd),
        host::process(FFMPEG_PID, OTHER_SHELL_PID, "ffmpeg", ffmpeg_cmd),
    ];
    let trainer = trainer(Rng::new(seed, 1));
    sim.spawn(MAIN_PID, MAIN_PID, Start::At(EPOCH_NS), Box::new(trainer));

    // stress-ng starts a few seconds in and forks its CPU workers.
    let mut forked = false;
    let stress_parent = move |_: i64, out: &mut VecDeque<Op>| {
        if forked {
            out.push_back(Op::Sleep(3600 * SEC));
            return;
        }
        forked = true;
        out.push_back(Op::Sleep(4 * SEC));
        for i in 0..STRESS_WORKERS {
            out.push_back(Op::Compute {
                ns: 400 * US,
                pages: Pages::new(0, 2),
            });
            out.push_back(Op::Fork(STRESS_PID + 1 + i));
        }
    };
    sim.spawn(
        STRESS_PID,
        STRESS_PID,
        Start::At(EPOCH_NS),
        Box::new(stress_parent),
    );
    for i in 0..STRESS_WORKERS {
        let pid = STRESS_PID + 1 + i;
        processes.push(host::process(pid, STRESS_PID, "stress-ng-cpu", stress_cmd));
        let spin = |_: i64, out: &mut VecDeque<Op>| {
            out.push_back(Op::Compute {
                ns: 50 * MS,
                pages: Pages::NONE,
            });
        };
        sim.spawn(pid, pid, Start::OnFork, Box::new(spin));
    }
    for t in 0..2 {
        let mut rng = Rng::new(seed, 200 + t as u64);
        let encode = move |_: i64, out: &mut VecDeque<Op>| {
            out.push_back(Op::Sleep(rng.range(200 * US, 900 * US)));
            out.push_back(Op::Compute {
                ns: rng.skewed(11 * MS, 1.5),
                pages: Pages::new(2, 2),
            });
            out.push_back(Op::Release(2 * 16 * 1024));
        };
        sim.spawn(
            FFMPEG_PID,
            FFMPEG_PID + t,
            Start::At(EPOCH_NS),
            Box::new(encode),
        );
    }
    Built {
        sim,
        session: host::session(&spec, vec![MAIN_PID], command),
        processes,
        end_ns: EPOCH_NS + duration_s as i64 * SEC,
    }
}

/// A training loop that prepares batches inline (no DataLoader workers).
fn trainer(mut rng: Rng) -> impl FnMut(i64, &mut VecDeque<Op>) {
    move |_, out| {
        out.push_back(Op::Compute {
            ns: rng.skewed(5 * MS, 1.3),
            pages: Pages::new(3, 4),
        });
        out.push_back(Op::Cuda(cuda::upload_pinned(&mut rng, BATCH_BYTES)));
        for _ in 0..30 {
            out.push_back(Op::Compute {
                ns: rng.skewed(20 * US, 2.0),
                pages: Pages::NONE,
            });
            let gpu = rng.skewed(800 * US, 1.6);
            out.push_back(Op::Cuda(cuda::launch(&mut rng, gpu, false)));
        }
        out.push_back(Op::Cuda(cuda::stream_sync()));
        out.push_back(Op::Compute {
            ns: rng.skewed(300 * US, 1.5),
            pages: Pages::NONE,
        });
        out.push_back(Op::Release(4 * 32 * 1024));
    }
}
