"""The seed benchmark's DataLoader phase, epoch after epoch in one process,
for measuring what a capture costs on it: the dataset and the model are
built once, then each epoch waits for a line on stdin (so the caller can
attach or detach a capture between epochs) and prints one JSON line
{"epoch", "start_ns", "end_ns", "seconds", "user_s", "system_s"}: the
wall time, and the CPU time the process (all its threads, and children
reaped during the epoch) spent in user space and in the kernel. A capture's
kernel-side work on the job (its tracepoint and uprobe programs, the
uprobe traps) runs on the job's own threads and shows in system_s.
Usage: dataloader_epochs.py [SAMPLES] [BATCH]
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from seed_benchmark import mlp, run_loader  # noqa: E402


def main() -> None:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1_048_576
    torch.manual_seed(0)
    x = torch.randn(samples, 100)
    model = mlp()
    with torch.no_grad():
        model(x[:1024].cuda())
        torch.cuda.synchronize()
        print(json.dumps({"ready": True}), flush=True)
        epoch = 0
        for line in sys.stdin:
            if line.strip() != "go":
                break
            c0 = os.times()
            t0 = time.perf_counter()
            start_ns = time.time_ns()
            run_loader(model, x, batch, 0)
            seconds = time.perf_counter() - t0
            c1 = os.times()
            user = (c1.user - c0.user) + (c1.children_user - c0.children_user)
            system = (c1.system - c0.system) + (c1.children_system - c0.children_system)
            print(json.dumps({"epoch": epoch, "start_ns": start_ns, "end_ns": time.time_ns(),
                              "seconds": round(seconds, 4), "user_s": round(user, 3),
                              "system_s": round(system, 3)}), flush=True)
            epoch += 1


if __name__ == "__main__":
    main()
