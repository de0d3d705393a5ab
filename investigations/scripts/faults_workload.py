"""PyTorch workloads for the capture fault checks on a GPU host.

  kill  queue seconds of matrix products, then synchronize; a timer thread
        SIGKILLs the process while the main thread waits inside the sync
  hang  the same without the kill (the capture stops while the sync runs)
  storm many tiny kernel launches back to back (to overflow a small ring)
"""
import argparse
import os
import signal
import threading
import time

import torch

ap = argparse.ArgumentParser()
ap.add_argument("mode", choices=["kill", "hang", "storm"])
ap.add_argument("--kill-after", type=float, default=2.0)
a = ap.parse_args()

x = torch.randn(8192, 8192, device="cuda")
torch.cuda.synchronize()
time.sleep(1.0)  # the capture finds libcudart once it is mapped
if a.mode == "storm":
    y = torch.zeros(16, device="cuda")
    t0 = time.time()
    for _ in range(50_000):
        y.add_(1.0)
    torch.cuda.synchronize()
    print(f"storm done {float(y[0])} in {time.time() - t0:.3f} s")
else:
    torch.backends.cuda.matmul.allow_tf32 = False
    for _ in range(500):
        x = x @ x * 1e-4
    if a.mode == "kill":
        threading.Timer(a.kill_after, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
    t0 = time.time()
    torch.cuda.synchronize()
    print(f"sync took {time.time() - t0:.2f} s")
