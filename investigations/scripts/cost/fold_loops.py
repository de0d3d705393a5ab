"""Loops of one CUDA op class for measuring what a capture writes (call
folding): for SECONDS of steady state after a warm-up, STEP calls per step.
  copy   STEP small host-to-device copies (pageable, 1 KiB: cudaMemcpyAsync
         and a stream synchronisation each), then a synchronize
  sync   STEP times: a 1,024-float add_ then torch.cuda.synchronize()
  event  STEP times: an event record and an event query
Prints one JSON line: class, steps, calls (the class's own calls made by
the loop body), steady_s, calls_per_s.
Usage: fold_loops.py CLASS SECONDS [STEP]
"""
import json
import sys
import time

import torch


def main() -> None:
    kind = sys.argv[1]
    seconds = float(sys.argv[2])
    step = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
    x = torch.zeros(1024, device="cuda")
    h = torch.ones(256)
    d = torch.empty(256, device="cuda")
    ev = torch.cuda.Event()

    def body() -> None:
        if kind == "copy":
            for _ in range(step):
                d.copy_(h)
            torch.cuda.synchronize()
        elif kind == "sync":
            for _ in range(step):
                x.add_(1)
                torch.cuda.synchronize()
        elif kind == "event":
            for _ in range(step):
                ev.record()
                ev.query()
        else:
            raise SystemExit(f"unknown class {kind}")

    for _ in range(2):
        body()
    steps = 0
    t0 = time.perf_counter()
    stop = t0 + seconds
    while time.perf_counter() < stop:
        body()
        steps += 1
    steady = time.perf_counter() - t0
    calls = steps * step
    print(json.dumps({"class": kind, "steps": steps, "calls": calls, "steady_s": round(steady, 3),
                      "calls_per_s": round(calls / steady, 1)}), flush=True)


if __name__ == "__main__":
    main()
