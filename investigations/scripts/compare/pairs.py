#!/usr/bin/env python3
"""Pairs of PyTorch workloads, each a cause of GPU idleness and the same job with its fix.

Every pair shares its model, data and step; only the fix differs. A run warms up, runs a
steady phase of `--seconds`, and prints one JSON line starting with `{"pair": ...}`: the
construction, the step count, the steady phase's bounds on CLOCK_REALTIME (the capture clock)
and a GPU-time estimate per step from CUDA events. `ingero compare CAUSE.db FIX.db` should
name the removed cause; the tests check its figures against SQL on the two files.

Pairs (side `cause`, then `fix`):
  dataloader  DataLoader(num_workers=0) with ~75 us of Python per sample, batch 256 -> 4 forked workers
  copies      one 128 MiB host-to-device copy per step from pageable memory -> from pinned memory
  item        `.item()` after every step's matmul -> once every 100 steps
  graphs      100 tiny `x.add_(1)` launches per step -> the same 100 captured in one CUDA graph
"""
import argparse
import json
import os
import sys
import threading
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "zoo"))
import zoo  # noqa: E402  (mark, span, run_steps, gpu_time, py_iters_for, mlp)

MIB = 1 << 20
PAIRS = ["dataloader", "copies", "item", "graphs"]
R = {}


def pair_dataloader(torch, fix, A):
    from torch.utils.data import DataLoader, Dataset

    batch, dim, workers = 256, 256, (4 if fix else 0)
    iters, ns_iter = zoo.py_iters_for(75.0)

    class DS(Dataset):
        def __init__(self):
            self.data = torch.randn(4096, dim)

        def __len__(self):
            return 10 ** 8

        def __getitem__(self, i):
            acc = 0
            for j in range(iters):
                acc += j * j
            return self.data[i % 4096]

    model = zoo.mlp(torch, dim)
    kw = {"multiprocessing_context": "fork"} if workers else {}
    loader = DataLoader(DS(), batch_size=batch, num_workers=workers, **kw)
    it = iter(loader)

    def step(_):
        model(next(it).cuda())
        torch.cuda.synchronize()

    with torch.no_grad():
        for _ in range(8):
            step(0)
        bd = torch.randn(batch, dim, device="cuda")
        g = zoo.gpu_time(torch, lambda: model(bd), reps=20)
        R["construction"] = {
            "num_workers": workers, "batch": batch, "per_sample": f"Python loop of {iters} iterations (~75 us)",
            "model": f"MLP {dim}-1024-1024-10, no_grad", "syncs_per_step": 1,
        }
        sp = zoo.run_steps(step, A.seconds)
    del it
    return sp, g["gpu_s_per_call"]


def pair_copies(torch, fix, A):
    nbytes = 128 * MIB
    src = torch.randn(nbytes // 4)
    if fix:
        src = src.pin_memory()
    dst = torch.empty(nbytes // 4, device="cuda")
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.randn_like(x)
    z = torch.empty_like(x)

    def step(_):
        dst.copy_(src, non_blocking=True)
        for _ in range(4):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    for _ in range(3):
        step(0)
    g = zoo.gpu_time(torch, lambda: [torch.mm(x, y, out=z) for _ in range(4)], reps=5)
    R["construction"] = {
        "copy": "host->device dst.copy_(src, non_blocking=True)", "src": "pinned" if fix else "pageable",
        "bytes_per_copy": nbytes, "copies_per_step": 1, "kernels_per_step": 4, "syncs_per_step": 1,
    }
    sp = zoo.run_steps(step, A.seconds)
    return sp, g["gpu_s_per_call"]


def pair_item(torch, fix, A):
    every = 100 if fix else 1
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn_like(a)
    c = torch.empty_like(a)
    total = torch.zeros((), device="cuda")
    vals = []

    def gpu_part():
        torch.mm(a, b, out=c)
        total.add_(c.sum())

    def step(i):
        gpu_part()
        if (i + 1) % every == 0:
            vals.append(total.item())
            if len(vals) > 1000:
                del vals[:]

    for i in range(200):
        step(i)
    torch.cuda.synchronize()
    g = zoo.gpu_time(torch, gpu_part, reps=50)
    R["construction"] = {
        "op": "torch.mm float32 1024^2, running sum on the GPU", "kernels_per_step": 3,
        "item_every_steps": every, "syncs_per_step": 1.0 / every,
    }
    sp = zoo.run_steps(step, A.seconds)
    torch.cuda.synchronize()
    return sp, g["gpu_s_per_call"]


def pair_graphs(torch, fix, A):
    kernels = 100
    x = torch.zeros(1024, device="cuda")

    def body():
        for _ in range(kernels):
            x.add_(1.0)

    run = body
    if fix:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                body()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            body()
        run = graph.replay

    def step(_):
        run()
        torch.cuda.synchronize()

    for _ in range(20):
        step(0)
    g = zoo.gpu_time(torch, run, reps=20)
    R["construction"] = {
        "kernels_per_step": kernels, "op": "x.add_(1.0) on 1024 float32",
        "launch": "one CUDA graph replay" if fix else "eager, one launch per kernel", "syncs_per_step": 1,
    }
    sp = zoo.run_steps(step, A.seconds)
    return sp, g["gpu_s_per_call"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pair", choices=PAIRS, required=True)
    ap.add_argument("--side", choices=["cause", "fix"], required=True)
    ap.add_argument("--seconds", type=float, default=5.0)
    A = ap.parse_args()
    R.update({"pair": A.pair, "side": A.side, "ok": False, "pid": os.getpid(),
              "tid": threading.get_native_id(), "t_start_epoch_ns": time.time_ns()})
    rc = 1
    try:
        import torch
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        R["device"] = torch.cuda.get_device_name(0)
        R["torch"] = torch.__version__
        sp, gpu_s = globals()["pair_" + A.pair](torch, A.side == "fix", A)
        R["steady"] = sp
        R["gpu_s_per_step"] = gpu_s
        R["gpu_busy_est"] = zoo.busy_est(gpu_s, sp["steps"], sp["wall_s"])
        R["ok"] = True
        rc = 0
    except BaseException as e:  # noqa: BLE001
        R["error"] = repr(e)[:1000]
        R["traceback"] = traceback.format_exc()[-3000:]
    finally:
        R["t_end_epoch_ns"] = time.time_ns()
        sys.stdout.write(json.dumps(R, default=str) + "\n")
        sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
