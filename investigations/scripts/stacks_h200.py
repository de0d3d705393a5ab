"""Three PyTorch workloads whose host-side hot spot is written on purpose, for
checking that stack samples name it (issue 15).

Each case runs a steady phase of about --seconds and prints ONE JSON line on
stdout, starting with {"stacks_case": ...}: what it constructed (the function
that should be the top frame of the GPU thread's host wait, its file, sizes),
the steps made, the wall time, and the GPU thread's id and CPU time, so the
recording can be checked against the construction. Progress goes to stderr.

  getitem_transform  a Dataset whose __getitem__ runs a per-sample pure-Python
                     transform (slow_transform), read through a DataLoader
                     (num_workers=0, so it runs on the GPU thread); expected
                     top frame of on-CPU host wait: stacks_h200.py:slow_transform
  item_sync          a training step that calls loss.item() every step; the GPU
                     thread waits inside cudaStreamSynchronize/cuMemcpyDtoH
                     (in_cuda / blocked), expected top Python frame of that wait:
                     stacks_h200.py:item_step
  python_busy_loop   a pure-Python loop between kernel launches (busy_between);
                     expected top frame of on-CPU host wait:
                     stacks_h200.py:busy_between

Usage: python stacks_h200.py --case NAME [--seconds 8]
Only torch and the standard library.
"""
import argparse
import json
import os
import resource
import sys
import threading
import time

import torch
from torch.utils.data import DataLoader, Dataset

R = {}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def slow_transform(values):
    """Per-sample pure-Python transform: the constructed hot spot."""
    out = []
    for v in values:
        x = v
        for _ in range(8):
            x = (x * 1.0001 + 0.5) % 97.0
        out.append(x)
    return out


class TransformDataset(Dataset):
    def __init__(self, n, dim):
        self.n = n
        self.dim = dim
        self.base = [float(i % 13) for i in range(dim)]

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return torch.tensor(slow_transform(self.base), dtype=torch.float32)


def case_getitem_transform(args, dev):
    dim, batch = 256, 64
    R.update(hot_function="slow_transform", caller="TransformDataset.__getitem__",
             file=os.path.basename(__file__), dim=dim, batch=batch, workers=0,
             expected_category="on_cpu")
    model = torch.nn.Linear(dim, dim).to(dev)
    loader = DataLoader(TransformDataset(10_000_000, dim), batch_size=batch, num_workers=0)
    steps = 0
    end = time.monotonic() + args.seconds
    for b in loader:
        model(b.to(dev, non_blocking=True)).sum()
        steps += 1
        if time.monotonic() >= end:
            break
    torch.cuda.synchronize()
    return steps


def item_step(model, x, opt):
    """One step with a .item() sync: the constructed wait."""
    opt.zero_grad(set_to_none=True)
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    return loss.item()


def case_item_sync(args, dev):
    n, layers = 4096, 8
    R.update(hot_function="item_step", sync="loss.item() every step",
             file=os.path.basename(__file__), n=n, layers=layers,
             expected_category="in_cuda or blocked")
    model = torch.nn.Sequential(*[torch.nn.Linear(n, n) for _ in range(layers)]).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-6)
    x = torch.randn(256, n, device=dev)
    steps = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        item_step(model, x, opt)
        steps += 1
    return steps


def busy_between(rounds):
    """Pure-Python busy loop between launches: the constructed hot spot."""
    acc = 0
    for i in range(rounds):
        acc = (acc * 31 + i) % 1000003
    return acc


def case_python_busy_loop(args, dev):
    rounds, kernels = 20000, 4
    R.update(hot_function="busy_between", file=os.path.basename(__file__),
             rounds_per_step=rounds, kernels_per_step=kernels, expected_category="on_cpu")
    x = torch.randn(1 << 20, device=dev)
    steps = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        for _ in range(kernels):
            x.mul_(1.0001)
        busy_between(rounds)
        steps += 1
    torch.cuda.synchronize()
    return steps


CASES = {
    "getitem_transform": case_getitem_transform,
    "item_sync": case_item_sync,
    "python_busy_loop": case_python_busy_loop,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--seconds", type=float, default=8.0)
    args = ap.parse_args()
    dev = torch.device("cuda")
    torch.ones(1, device=dev).sum().item()
    R["stacks_case"] = args.case
    R["gpu_tid"] = threading.get_native_id()
    R["pid"] = os.getpid()
    t0_real, t0_mono = time.time_ns(), time.monotonic_ns()
    cpu0 = resource.getrusage(resource.RUSAGE_THREAD)
    wall0 = time.perf_counter()
    steps = CASES[args.case](args, dev)
    wall = time.perf_counter() - wall0
    cpu1 = resource.getrusage(resource.RUSAGE_THREAD)
    R.update(steps=steps, wall_s=round(wall, 3),
             gpu_thread_cpu_s=round(cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime, 3),
             steady_realtime_ns=[t0_real, time.time_ns()],
             steady_monotonic_ns=[t0_mono, time.monotonic_ns()],
             python=sys.version.split()[0], torch=torch.__version__)
    print(json.dumps(R), flush=True)
    log(f"{args.case}: {steps} steps in {wall:.2f} s")


if __name__ == "__main__":
    main()
