"""A launch-bound loop for measuring what a capture costs: `x.add_(1)` on
1,024 floats, BATCH launches per synchronisation, for SECONDS of steady
state after a warm-up. Prints one JSON line:
  start_ns      time.time_ns() at the first statement (before importing torch)
  first_cuda_ns just before the first CUDA call
  launches, steady_s, launches_per_s over the steady phase
  end_ns        just before exiting
With EVERY (seconds), it also prints one line per window of about that
length during the steady phase: {"window_end_ns", "window_s", "window_launches"},
so that a probe attached to the running loop for a while (paired_cost.sh)
is compared with the same process untraced before and after.
With LOOP_PRINT_ADDR=1 it first prints {"cuLaunchKernel_addr": N}, the
function's address in this process (for code_bytes.py).
Usage: launch_loop.py SECONDS [BATCH] [EVERY]
"""
import time

START_NS = time.time_ns()
import ctypes
import json
import os
import sys

import torch


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    every = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    first_cuda_ns = time.time_ns()
    x = torch.zeros(1024, device="cuda")
    if os.environ.get("LOOP_PRINT_ADDR") == "1":
        fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
        print(json.dumps({"cuLaunchKernel_addr": ctypes.cast(fn, ctypes.c_void_p).value}), flush=True)
    for _ in range(3):
        for _ in range(batch):
            x.add_(1)
        torch.cuda.synchronize()
    launches = 0
    t0 = time.perf_counter()
    stop = t0 + seconds
    w0, wn = t0, 0
    while time.perf_counter() < stop:
        for _ in range(batch):
            x.add_(1)
        torch.cuda.synchronize()
        launches += batch
        if every:
            wn += batch
            now = time.perf_counter()
            if now - w0 >= every:
                print(json.dumps({"window_end_ns": time.time_ns(), "window_s": round(now - w0, 6), "window_launches": wn}), flush=True)
                w0, wn = now, 0
    steady = time.perf_counter() - t0
    print(
        json.dumps(
            {
                "start_ns": START_NS,
                "first_cuda_ns": first_cuda_ns,
                "launches": launches,
                "steady_s": round(steady, 4),
                "launches_per_s": round(launches / steady, 1),
                "end_ns": time.time_ns(),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
