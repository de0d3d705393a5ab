"""Small-kernel launch storm, optionally under CPU contention.

Launches ITERS tiny element-wise kernels in a Python loop, synchronising every
STEP launches; with --hogs N it first starts N busy-loop processes (one per
core by default) that compete with the launching thread.
Also used to time the CPU cost of one cudaLaunchKernel (--launch-cost).
Usage: python launch_storm.py [--iters 200000] [--step 100] [--hogs N|-1]
"""
import argparse
import multiprocessing as mp
import os
import time

import torch


def hog(stop_at):
    x = 0
    while time.time() < stop_at:
        x += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=200_000)
    ap.add_argument("--step", type=int, default=100)
    ap.add_argument("--hogs", type=int, default=0, help="-1 = one per core")
    ap.add_argument("--hog-seconds", type=float, default=60.0)
    args = ap.parse_args()
    x = torch.zeros(1024, device="cuda")
    for _ in range(1000):
        x.add_(1)
    torch.cuda.synchronize()
    procs = []
    n = os.cpu_count() if args.hogs < 0 else args.hogs
    if n:
        ctx = mp.get_context("fork")
        stop_at = time.time() + args.hog_seconds
        procs = [ctx.Process(target=hog, args=(stop_at,)) for _ in range(n)]
        for p in procs:
            p.start()
        time.sleep(0.5)
    t = time.perf_counter()
    for i in range(args.iters):
        x.add_(1)
        if (i + 1) % args.step == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    print(f"launches {args.iters} in {dt:.3f} s: {dt / args.iters * 1e9:.0f} ns per launch, hogs {n}", flush=True)
    for p in procs:
        p.terminate()
        p.join()


if __name__ == "__main__":
    main()
