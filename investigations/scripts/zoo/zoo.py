"""Constructed PyTorch workloads whose cause of GPU idleness is known by construction.

One process runs one case (see README.md next to this file for the expected
figures). Each case warms up, then runs a steady phase of about --seconds
(or exactly --steps steps, for overhead comparisons), and prints ONE JSON line
on stdout, starting with {"zoo_case": ...}: the construction figures (sizes,
kernels per step, allocations, sleeps), the steady phase's step count, wall
time, the GPU thread's CPU time and context switches, its boundaries on
CLOCK_REALTIME and CLOCK_MONOTONIC, and a GPU-time estimate per step measured
with CUDA events while the queue was pre-filled (so host gaps do not count).
Everything else (progress, warnings) goes to stderr.

Usage: python3 zoo.py --case NAME [--seconds 6] [--steps N] [--set key=value ...]
       python3 zoo.py --list
Cases: gpu_bound launch_bound alloc_churn dataloader_starved slow_workers
       sync_in_loop pageable_copies pinned_copies_overlap io_bound cpu_contention
       compile_stall cuda_graphs sleep_idle mixed_phases gil_contention
       one_off_block page_alloc_storm idle_server hf_generate
Only torch, numpy-free, standard library.
"""
import argparse
import json
import math
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
import traceback

MIB = 1 << 20

# Construction parameters per case (override with --set key=value).
DEFAULTS = {
    "gpu_bound": {"n": 8192, "matmuls_per_step": 10},
    "launch_bound": {"elements": 1024, "kernels_per_step": 100},
    "alloc_churn": {"sizes_mib": "4,16,64,256"},
    "dataloader_starved": {"batch": 256, "dim": 256, "sample_us": 75.0},
    "slow_workers": {"batch": 32, "dim": 256, "workers": 4, "sample_ms": 1.0},
    "sync_in_loop": {"n": 1024},
    "pageable_copies": {"mib": 256},
    "pinned_copies_overlap": {"mib": 256, "n": 4096},
    "io_bound": {"read_mib": 32, "write_mib": 4, "n": 1024},
    "cpu_contention": {"elements": 4 * MIB, "kernels_per_step": 20, "hogs": -1, "baseline_s": 1.5},
    "compile_stall": {"shapes": 4, "phase_s": 1.0, "calls_per_step": 10, "budget_s": 60.0,
                      "fallback_s": 2.0},
    "cuda_graphs": {"elements": 1024, "kernels_per_graph": 100, "replays_per_step": 10},
    "sleep_idle": {"n": 8192, "matmuls_per_step": 3, "sleep_ms": 50.0},
    "mixed_phases": {"n": 8192, "matmuls_per_step": 10, "gpu_s": 3.0, "host_s": 3.0},
    "gil_contention": {"n": 2048, "matmuls_per_step": 4, "python_threads": 1},
    "one_off_block": {"n": 8192, "matmuls_per_step": 10, "block_s": 2.0},
    "page_alloc_storm": {"n": 2048, "host_mib": 256},
    "idle_server": {"n": 4096, "request_every_s": 2.0},
    "hf_generate": {"layers": 4, "hidden": 512, "heads": 8, "new_tokens": 64, "batch": 1},
}
CASES = list(DEFAULTS)

R = {}  # the result line, filled as the case goes


def log(*a):
    print("[zoo]", *a, file=sys.stderr, flush=True)


def mark():
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    return {
        "perf": time.perf_counter(),
        "epoch_ns": time.time_ns(),
        "mono_ns": time.monotonic_ns(),
        "cpu": time.thread_time(),
        "nvcsw": ru.ru_nvcsw,
        "nivcsw": ru.ru_nivcsw,
    }


def span(a, b, **extra):
    s = {
        "wall_s": round(b["perf"] - a["perf"], 6),
        "t0_epoch_ns": a["epoch_ns"],
        "t1_epoch_ns": b["epoch_ns"],
        "t0_mono_ns": a["mono_ns"],
        "t1_mono_ns": b["mono_ns"],
        # CPU time and context switches of the calling (GPU-driving) thread:
        # voluntary = it blocked, involuntary = it was preempted.
        "thread_cpu_s": round(b["cpu"] - a["cpu"], 6),
        "voluntary_switches": b["nvcsw"] - a["nvcsw"],
        "involuntary_switches": b["nivcsw"] - a["nivcsw"],
    }
    s.update(extra)
    return s


def run_steps(step, seconds, steps=0, max_seconds=0.0, name="steady"):
    """Calls step(i) until `seconds` passed, or exactly `steps` times (capped by max_seconds)."""
    cap = max_seconds if max_seconds > 0 else 3 * seconds + 30
    a = mark()
    n = 0
    while True:
        step(n)
        n += 1
        t = time.perf_counter() - a["perf"]
        if steps > 0:
            if n >= steps or t >= cap:
                break
        elif t >= seconds:
            break
    b = mark()
    return span(a, b, name=name, steps=n, truncated=bool(steps > 0 and n < steps))


def gpu_time(torch, fn, reps, sleep_ms=50.0):
    """GPU seconds per call of fn (asynchronous work only): a sleep kernel holds the
    stream while the host enqueues reps calls, so the events time the GPU alone."""
    torch.cuda.synchronize()
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    slept = True
    try:
        torch.cuda._sleep(int(sleep_ms * 2e6))  # cycles; about sleep_ms at 2 GHz
    except Exception:
        slept = False
    t = time.perf_counter()
    e0.record()
    for _ in range(reps):
        fn()
    e1.record()
    host = time.perf_counter() - t
    e1.synchronize()
    total = e0.elapsed_time(e1) / 1e3
    return {
        "gpu_s_per_call": total / reps,
        "reps": reps,
        "host_enqueue_s": round(host, 6),
        "reliable": bool(slept and (host < 0.8 * sleep_ms / 1e3 or total > 2 * host)),
    }


def busy_est(gpu_s_per_step, steps, wall_s):
    if wall_s <= 0:
        return None
    return round(min(1.0, gpu_s_per_step * steps / wall_s), 4)


def py_iters_for(us):
    """Iterations of the per-sample Python loop that take about `us` microseconds."""
    best = 1e9
    for _ in range(3):
        t = time.perf_counter()
        acc = 0
        for j in range(20000):
            acc += j * j
        best = min(best, (time.perf_counter() - t) / 20000)
    return max(1, int(us * 1e-6 / best)), best


def host_compute(seconds):
    """Pure-Python arithmetic for `seconds` (no CUDA call); returns inner iterations."""
    end = time.perf_counter() + seconds
    n = 0
    acc = 0
    while time.perf_counter() < end:
        for j in range(10000):
            acc += j * j
        n += 10000
    return n


# --------------------------------------------------------------------------- cases


def matmul_setup(torch, n):
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    z = torch.empty_like(x)
    return x, y, z


def case_gpu_bound(torch, P, A):
    n, k = P["n"], P["matmuls_per_step"]
    x, y, z = matmul_setup(torch, n)

    def step(_):
        for _ in range(k):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(3):
        step(0)
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=10)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "op": f"torch.mm bf16 {n}x{n} @ {n}x{n}", "matmuls_per_step": k,
        "flop_per_matmul": 2 * n ** 3, "syncs_per_step": 1, "sync": "torch.cuda.synchronize",
    }
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    per_step = g["gpu_s_per_call"] * k
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step, "matmuls": sp["steps"] * k,
        "tflops": round(2 * n ** 3 * k * sp["steps"] / sp["wall_s"] / 1e12, 1),
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
    }


def case_launch_bound(torch, P, A):
    e, k = P["elements"], P["kernels_per_step"]
    x = torch.zeros(e, device="cuda")

    def step(_):
        for _ in range(k):
            x.add_(1.0)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(50):
        step(0)
    g = gpu_time(torch, lambda: x.add_(1.0), reps=400)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "op": f"x.add_(1.0) on {e} float32", "kernels_per_step": k, "syncs_per_step": 1,
        "expected_geometry": "PyTorch vectorized elementwise kernel, block 128 threads, "
                             "grid ceil(elements / (128 * elements_per_thread)) = 1-2 blocks",
    }
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    launches = sp["steps"] * k
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_kernel": g["gpu_s_per_call"], "launches": launches,
        "host_s_per_launch": round(sp["wall_s"] / launches, 9),
        "gpu_busy_est": busy_est(g["gpu_s_per_call"] * k, sp["steps"], sp["wall_s"]),
    }


def case_alloc_churn(torch, P, A):
    sizes = [int(s) * MIB for s in str(P["sizes_mib"]).split(",")]
    acc = {"alloc_s": 0.0, "free_s": 0.0}
    mode = {"m": "uncached"}

    def step(_):
        t = time.perf_counter()
        bufs = [torch.empty(s, dtype=torch.uint8, device="cuda") for s in sizes]
        t1 = time.perf_counter()
        bufs[0].fill_(1)
        t2 = time.perf_counter()
        del bufs[:]
        if mode["m"] == "empty_cache":
            torch.cuda.empty_cache()
        t3 = time.perf_counter()
        torch.cuda.synchronize()
        acc["alloc_s"] += t1 - t
        acc["free_s"] += t3 - t2

    w0 = mark()
    step(0)
    # Caching off means nothing stays reserved once the tensors are gone.
    reserved = torch.cuda.memory_reserved()
    if reserved > 0:
        mode["m"] = "empty_cache"
        log("caching allocator still active (reserved", reserved, "): empty_cache() every step")
    for _ in range(5):
        step(0)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "env_PYTORCH_NO_CUDA_MEMORY_CACHING": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING"),
        "mode": mode["m"], "reserved_after_first_free": reserved,
        "alloc_sizes_bytes": sizes, "allocs_per_step": len(sizes), "frees_per_step": len(sizes),
        "bytes_per_step": sum(sizes), "kernels_per_step": 1,
        "kernel": f"fill_ on the {sizes[0]} byte buffer", "syncs_per_step": 1,
    }
    acc["alloc_s"] = acc["free_s"] = 0.0
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "allocs": sp["steps"] * len(sizes), "frees": sp["steps"] * len(sizes),
        "host_alloc_s": round(acc["alloc_s"], 6), "host_free_s": round(acc["free_s"], 6),
        "alloc_free_share_of_wall": round((acc["alloc_s"] + acc["free_s"]) / sp["wall_s"], 4),
        "gpu_busy_est": "< 0.01 (one fill of the smallest buffer per step)",
    }


def mlp(torch, dim):
    return torch.nn.Sequential(
        torch.nn.Linear(dim, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10),
    ).cuda()


def loader_case(torch, P, A, workers):
    from torch.utils.data import DataLoader, Dataset

    B, dim = P["batch"], P["dim"]
    if workers == 0:
        iters, ns_iter = py_iters_for(P["sample_us"])
        spin_s = 0.0
    else:
        iters, ns_iter, spin_s = 0, 0.0, P["sample_ms"] / 1e3

    class DS(Dataset):
        def __init__(self):
            self.data = torch.randn(4096, dim)

        def __len__(self):
            return 10 ** 8

        def __getitem__(self, i):
            if spin_s:
                end = time.perf_counter() + spin_s
                while time.perf_counter() < end:
                    pass
            acc = 0
            for j in range(iters):
                acc += j * j
            return self.data[i % 4096]

    model = mlp(torch, dim)
    kw = {"multiprocessing_context": "fork"} if workers else {}
    loader = DataLoader(DS(), batch_size=B, shuffle=False, num_workers=workers, **kw)
    it = iter(loader)
    acc = {"fetch_s": 0.0}

    def step(_):
        t = time.perf_counter()
        b = next(it)
        acc["fetch_s"] += time.perf_counter() - t
        model(b.cuda())
        torch.cuda.synchronize()

    try:
        with torch.no_grad():
            w0 = mark()
            for _ in range(8 if workers else 5):
                step(0)
            bd = torch.randn(B, dim, device="cuda")
            g = gpu_time(torch, lambda: model(bd), reps=20)
            R["warmup"] = span(w0, mark())
            R["construction"] = {
                "batch": B, "sample_shape": [dim], "num_workers": workers,
                "per_sample": (f"Python loop of {iters} iterations (~{P['sample_us']} us)" if not workers
                               else f"busy spin of {P['sample_ms']} ms in the worker"),
                "py_loop_iters": iters, "py_ns_per_iter": round(ns_iter * 1e9, 2),
                "model": f"MLP {dim}-1024-1024-10 (3 GEMM + 2 ReLU + bias), no_grad",
                "h2d_bytes_per_step": B * dim * 4, "h2d": "pageable .cuda()", "syncs_per_step": 1,
            }
            acc["fetch_s"] = 0.0
            sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        del it
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": g["gpu_s_per_call"], "batches": sp["steps"],
        "samples": sp["steps"] * B, "host_fetch_s": round(acc["fetch_s"], 6),
        "fetch_share_of_wall": round(acc["fetch_s"] / sp["wall_s"], 4),
        "gpu_busy_est": busy_est(g["gpu_s_per_call"], sp["steps"], sp["wall_s"]),
    }
    if workers:
        R["derived"]["worker_bound_s_per_batch"] = round(B * spin_s / workers, 6)


def case_dataloader_starved(torch, P, A):
    loader_case(torch, P, A, 0)


def case_slow_workers(torch, P, A):
    loader_case(torch, P, A, int(P["workers"]))


def case_sync_in_loop(torch, P, A):
    n = P["n"]
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    c = torch.empty_like(a)
    vals = []

    def gpu_part():
        torch.mm(a, b, out=c)
        return c.sum()

    def step(_):
        vals.append(gpu_part().item())
        if len(vals) > 1000:
            del vals[:]

    w0 = mark()
    for _ in range(50):
        step(0)
    g = gpu_time(torch, gpu_part, reps=50)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "op": f"torch.mm float32 {n}x{n} then .sum().item()", "kernels_per_step": 2,
        "d2h_copies_per_step": 1, "d2h_bytes": 4, "syncs_per_step": 1,
        "sync": ".item() (copy of 4 bytes + stream synchronize)",
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": g["gpu_s_per_call"],
        "host_s_per_step": round(sp["wall_s"] / sp["steps"], 9),
        "gpu_busy_est": busy_est(g["gpu_s_per_call"], sp["steps"], sp["wall_s"]),
    }


def copy_time(torch, dst, src, stream=None):
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    s = stream or torch.cuda.current_stream()
    with torch.cuda.stream(s):
        e0.record()
        dst.copy_(src, non_blocking=True)
        e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) / 1e3


def case_pageable_copies(torch, P, A):
    nbytes = P["mib"] * MIB
    src = torch.randn(nbytes // 4)
    dst = torch.empty(nbytes // 4, device="cuda")
    acc = {"call_s": 0.0}

    def step(_):
        t = time.perf_counter()
        dst.copy_(src, non_blocking=True)
        acc["call_s"] += time.perf_counter() - t
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(3):
        step(0)
    ct = min(copy_time(torch, dst, src) for _ in range(3))
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "copy": "host->device dst.copy_(src, non_blocking=True)", "src": "pageable",
        "bytes_per_copy": nbytes, "copies_per_step": 1, "kernels_per_step": 0, "syncs_per_step": 1,
    }
    acc["call_s"] = 0.0
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "copy_s_events": round(ct, 6), "copy_gbps_events": round(nbytes / ct / 1e9, 2),
        "copies": sp["steps"], "bytes": sp["steps"] * nbytes,
        "host_s_inside_copy_call": round(acc["call_s"], 6),
        "copy_call_share_of_wall": round(acc["call_s"] / sp["wall_s"], 4),
        "gbps_steady": round(sp["steps"] * nbytes / sp["wall_s"] / 1e9, 2),
        "gpu_busy_est": 0.0, "copy_engine_busy_est": round(min(1.0, ct * sp["steps"] / sp["wall_s"]), 4),
    }


def case_pinned_copies_overlap(torch, P, A):
    nbytes = P["mib"] * MIB
    src = torch.randn(nbytes // 4).pin_memory()
    dst = torch.empty(nbytes // 4, device="cuda")
    x, y, z = matmul_setup(torch, P["n"])
    side = torch.cuda.Stream()
    acc = {"call_s": 0.0}
    cfg = {"mm": 1}

    def step(_):
        t = time.perf_counter()
        with torch.cuda.stream(side):
            dst.copy_(src, non_blocking=True)
        acc["call_s"] += time.perf_counter() - t
        for _ in range(cfg["mm"]):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(3):
        torch.mm(x, y, out=z)
        copy_time(torch, dst, src, side)
    ct = min(copy_time(torch, dst, src, side) for _ in range(3))
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=20)
    cfg["mm"] = max(1, int(round(ct / g["gpu_s_per_call"])))
    for _ in range(3):
        step(0)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "copy": "host->device dst.copy_(src, non_blocking=True) on a side stream", "src": "pinned",
        "bytes_per_copy": nbytes, "copies_per_step": 1,
        "overlap": f"{cfg['mm']} x torch.mm bf16 {P['n']}^3 on the default stream (matched to the copy time)",
        "kernels_per_step": cfg["mm"], "syncs_per_step": 1,
    }
    acc["call_s"] = 0.0
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    per_step = g["gpu_s_per_call"] * cfg["mm"]
    R["derived"] = {
        "copy_s_events": round(ct, 6), "copy_gbps_events": round(nbytes / ct / 1e9, 2),
        "gpu_timing": g, "gpu_s_per_step": per_step, "copies": sp["steps"],
        "host_s_inside_copy_call": round(acc["call_s"], 6),
        "host_s_per_copy_call": round(acc["call_s"] / max(1, sp["steps"]), 9),
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
        "copy_engine_busy_est": round(min(1.0, ct * sp["steps"] / sp["wall_s"]), 4),
    }


def fs_type(path):
    best, typ = "", "?"
    try:
        real = os.path.realpath(path)
        with open("/proc/mounts") as f:
            for line in f:
                p = line.split()
                if len(p) > 2 and (real == p[1] or real.startswith(p[1].rstrip("/") + "/")) \
                        and len(p[1]) >= len(best):
                    best, typ = p[1], p[2]
    except OSError:
        pass
    return typ, best


def case_io_bound(torch, P, A):
    base = os.environ.get("ZOO_IO_DIR") or os.getcwd()
    d = tempfile.mkdtemp(prefix="zoo-io-", dir=base)
    try:
        rpath, wpath = os.path.join(d, "read.bin"), os.path.join(d, "write.bin")
        rbytes, wbytes = P["read_mib"] * MIB, P["write_mib"] * MIB
        with open(rpath, "wb") as f:
            for _ in range(P["read_mib"]):
                f.write(os.urandom(MIB))
            f.flush()
            os.fsync(f.fileno())
        wdata = os.urandom(wbytes)
        wfd = os.open(wpath, os.O_WRONLY | os.O_CREAT, 0o600)
        buf = bytearray(MIB)
        a = torch.randn(P["n"], P["n"], device="cuda")
        c = torch.empty_like(a)
        acc = {"read_s": 0.0, "write_s": 0.0, "gpu_phase_s": 0.0, "read_bytes": 0}

        def step(_):
            t0 = time.perf_counter()
            fd = os.open(rpath, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # drop it from the page cache
                while True:
                    n = os.readv(fd, [buf])
                    if n <= 0:
                        break
                    acc["read_bytes"] += n
            finally:
                os.close(fd)
            t1 = time.perf_counter()
            os.pwrite(wfd, wdata, 0)
            os.fsync(wfd)
            t2 = time.perf_counter()
            torch.mm(a, a, out=c)
            torch.cuda.synchronize()
            t3 = time.perf_counter()
            acc["read_s"] += t1 - t0
            acc["write_s"] += t2 - t1
            acc["gpu_phase_s"] += t3 - t2

        try:
            w0 = mark()
            for _ in range(2):
                step(0)
            g = gpu_time(torch, lambda: torch.mm(a, a, out=c), reps=20)
            R["warmup"] = span(w0, mark())
            typ, mnt = fs_type(d)
            R["construction"] = {
                "dir": d, "fs_type": typ, "mount": mnt,
                "read": f"posix_fadvise(DONTNEED) then os.readv of {rbytes} bytes in 1 MiB reads",
                "write": f"os.pwrite of {wbytes} bytes then os.fsync", "read_bytes_per_step": rbytes,
                "write_bytes_per_step": wbytes, "kernels_per_step": 1,
                "kernel": f"torch.mm float32 {P['n']}^3", "syncs_per_step": 1,
            }
            for k in acc:
                acc[k] = 0
            sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
        finally:
            os.close(wfd)
        R["steady"] = sp
        io = acc["read_s"] + acc["write_s"]
        R["derived"] = {
            "gpu_timing": g, "gpu_s_per_step": g["gpu_s_per_call"],
            "read_s": round(acc["read_s"], 6), "write_fsync_s": round(acc["write_s"], 6),
            "gpu_phase_s": round(acc["gpu_phase_s"], 6), "io_share_of_wall": round(io / sp["wall_s"], 4),
            "read_gbps": round(acc["read_bytes"] / max(acc["read_s"], 1e-9) / 1e9, 3),
            "note": "read_gbps far above the disk's rate means the page cache was not bypassed",
            "gpu_busy_est": busy_est(g["gpu_s_per_call"], sp["steps"], sp["wall_s"]),
        }
    finally:
        shutil.rmtree(d, ignore_errors=True)


def hog(stop_at):
    x = 0
    while time.time() < stop_at:
        x += 1


def case_cpu_contention(torch, P, A):
    import multiprocessing as mp

    e, k = P["elements"], P["kernels_per_step"]
    x = torch.randn(e, device="cuda")
    y = torch.empty_like(x)

    def step(_):
        for _ in range(k):
            torch.add(x, 1.0, out=y)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(50):
        step(0)
    g = gpu_time(torch, lambda: torch.add(x, 1.0, out=y), reps=200)
    R["warmup"] = span(w0, mark())
    per_step = g["gpu_s_per_call"] * k
    base = run_steps(step, P["baseline_s"], name="baseline_no_hogs")
    base["gpu_busy_est"] = busy_est(per_step, base["steps"], base["wall_s"])
    nh = os.cpu_count() if int(P["hogs"]) < 0 else int(P["hogs"])
    R["construction"] = {
        "op": f"torch.add(x, 1.0, out=y) on {e} float32", "kernels_per_step": k, "syncs_per_step": 1,
        "hogs": nh, "hog": "forked Python busy loop, one process each", "cpus": os.cpu_count(),
        "expected_geometry": "PyTorch vectorized elementwise kernel, block 128 threads, "
                             f"about {e // 512} blocks (or half as many with 8 elements per thread)",
    }
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=hog, args=(time.time() + A.max_seconds + A.seconds + 30,), daemon=True)
             for _ in range(nh)]
    try:
        for p in procs:
            p.start()
        time.sleep(0.5)
        sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join(5)
    R["phases"] = [base]
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step, "launches": sp["steps"] * k,
        "baseline_s_per_step": round(base["wall_s"] / base["steps"], 9),
        "contended_s_per_step": round(sp["wall_s"] / sp["steps"], 9),
        "on_cpu_share": round(sp["thread_cpu_s"] / sp["wall_s"], 4),
        "baseline_gpu_busy_est": base["gpu_busy_est"],
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
    }


def case_compile_stall(torch, P, A):
    phases = []
    R["phases"] = phases
    k = int(P["calls_per_step"])

    def f(x):
        return (torch.sin(x) * torch.cos(x) + x).relu().sum(dim=-1)

    try:
        dyn = torch._dynamo.config
        for name in ("recompile_limit", "cache_size_limit"):
            if hasattr(dyn, name):
                setattr(dyn, name, 64)
    except Exception as e:  # noqa: BLE001
        log("dynamo config:", e)
    compiled = {"fn": None, "ok": None, "error": None}
    try:
        compiled["fn"] = torch.compile(f, dynamic=False)
    except Exception as e:  # noqa: BLE001
        compiled["ok"], compiled["error"] = False, repr(e)[:500]
    shapes = [(2048, 1024 + 512 * i) for i in range(int(P["shapes"]))]
    t_start = time.perf_counter()
    w0 = mark()
    xx = torch.randn(64, 64, device="cuda")
    f(xx)
    torch.cuda.synchronize()
    R["warmup"] = span(w0, mark())
    total_steps = 0
    for i, shp in enumerate(shapes):
        if i > 0 and time.perf_counter() - t_start > P["budget_s"]:
            log("compile budget spent, stopping after", i, "shapes")
            break
        x = torch.randn(*shp, device="cuda")
        torch.cuda.synchronize()
        a = mark()
        fn = f
        if compiled["ok"] is not False:
            try:
                compiled["fn"](x)
                torch.cuda.synchronize()
                compiled["ok"] = True
                fn = compiled["fn"]
                kind = "compile"
            except Exception as e:  # noqa: BLE001
                compiled["ok"], compiled["error"] = False, repr(e)[:500]
                log("torch.compile failed, pure-Python fallback:", compiled["error"][:200])
                try:
                    torch._dynamo.reset()
                except Exception:  # noqa: BLE001
                    pass
        if compiled["ok"] is False:
            host_compute(P["fallback_s"])
            kind = "python_fallback"
        phases.append(span(a, mark(), name=f"{kind}_{shp[0]}x{shp[1]}", kind=kind, shape=list(shp)))

        def step(_, fn=fn, x=x):
            for _ in range(k):
                fn(x)
            torch.cuda.synchronize()

        sp = run_steps(step, P["phase_s"], name=f"run_{shp[0]}x{shp[1]}")
        sp.update(kind="run", shape=list(shp), compiled=fn is not f)
        phases.append(sp)
        total_steps += sp["steps"]
    counters = {}
    try:
        from torch._dynamo.utils import counters as c
        counters = {g: dict(v) for g, v in c.items() if g in ("stats", "recompiles", "frames")}
    except Exception:  # noqa: BLE001
        pass
    host = [p for p in phases if p["kind"] != "run"]
    runs = [p for p in phases if p["kind"] == "run"]
    R["construction"] = {
        "fn": "(sin(x) * cos(x) + x).relu().sum(dim=-1)", "compile": "torch.compile(dynamic=False)",
        "shapes": [list(s) for s in shapes], "calls_per_step": k, "syncs_per_step": 1,
        "compile_available": compiled["ok"] is True, "compile_error": compiled["error"],
        "fallback": None if compiled["ok"] else f"pure-Python loop of {P['fallback_s']} s per shape "
                                                "in place of each compilation, eager fn",
        "env": {kk: os.environ.get(kk) for kk in (
            "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCHINDUCTOR_FX_GRAPH_CACHE",
            "TORCHINDUCTOR_AUTOGRAD_CACHE", "TORCHINDUCTOR_COMPILE_THREADS")},
    }
    if phases:
        R["steady"] = {
            "name": "all phases", "wall_s": round(sum(p["wall_s"] for p in phases), 6),
            "t0_epoch_ns": phases[0]["t0_epoch_ns"], "t1_epoch_ns": phases[-1]["t1_epoch_ns"],
            "t0_mono_ns": phases[0]["t0_mono_ns"], "t1_mono_ns": phases[-1]["t1_mono_ns"],
            "steps": total_steps, "thread_cpu_s": round(sum(p["thread_cpu_s"] for p in phases), 6),
            "voluntary_switches": sum(p["voluntary_switches"] for p in phases),
            "involuntary_switches": sum(p["involuntary_switches"] for p in phases),
        }
    R["derived"] = {
        "host_phase_s": round(sum(p["wall_s"] for p in host), 6),
        "run_phase_s": round(sum(p["wall_s"] for p in runs), 6),
        "host_phase_share": round(sum(p["wall_s"] for p in host) / max(1e-9, sum(p["wall_s"] for p in phases)), 4),
        "dynamo_counters": counters,
        "gpu_busy_est": "small: GPU idle in every host phase; run phases are launch-bound",
    }


def case_cuda_graphs(torch, P, A):
    e, kg, r = P["elements"], P["kernels_per_graph"], P["replays_per_step"]
    x = torch.zeros(e, device="cuda")

    def body():
        for _ in range(kg):
            x.add_(1.0)

    w0 = mark()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            body()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    c0 = mark()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        body()
    torch.cuda.synchronize()
    capture = span(c0, mark(), name="capture")

    def step(_):
        for _ in range(r):
            graph.replay()
        torch.cuda.synchronize()

    for _ in range(20):
        step(0)
    g = gpu_time(torch, graph.replay, reps=20)
    R["warmup"] = span(w0, mark())
    R["phases"] = [capture]
    R["construction"] = {
        "graph": f"{kg} x x.add_(1.0) on {e} float32, captured once", "kernels_per_graph": kg,
        "graph_launches_per_step": r, "kernels_per_step": kg * r, "syncs_per_step": 1,
    }
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_replay": g["gpu_s_per_call"], "graph_launches": sp["steps"] * r,
        "kernels_in_graphs": sp["steps"] * r * kg,
        "gpu_busy_est": busy_est(g["gpu_s_per_call"] * r, sp["steps"], sp["wall_s"]),
    }


def case_sleep_idle(torch, P, A):
    n, k, sl = P["n"], P["matmuls_per_step"], P["sleep_ms"] / 1e3
    x, y, z = matmul_setup(torch, n)
    acc = {"sleep_s": 0.0}

    def step(_):
        for _ in range(k):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()
        t = time.perf_counter()
        time.sleep(sl)
        acc["sleep_s"] += time.perf_counter() - t

    w0 = mark()
    for _ in range(3):
        step(0)
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=10)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "op": f"torch.mm bf16 {n}^3", "matmuls_per_step": k, "syncs_per_step": 1,
        "sleep_s_per_step": sl, "sleep": "time.sleep after the synchronize",
    }
    acc["sleep_s"] = 0.0
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    per_step = g["gpu_s_per_call"] * k
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step, "sleeps": sp["steps"],
        "sleep_s": round(acc["sleep_s"], 6), "sleep_share_of_wall": round(acc["sleep_s"] / sp["wall_s"], 4),
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
    }


def case_mixed_phases(torch, P, A):
    n, k = P["n"], P["matmuls_per_step"]
    x, y, z = matmul_setup(torch, n)

    def step(_):
        for _ in range(k):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(3):
        step(0)
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=10)
    R["warmup"] = span(w0, mark())
    per_step = g["gpu_s_per_call"] * k
    phases = []
    a = mark()
    p1 = run_steps(step, P["gpu_s"], name="gpu_1")
    h0 = mark()
    iters = host_compute(P["host_s"])
    p2 = span(h0, mark(), name="host_python", steps=0, python_iters=iters)
    p3 = run_steps(step, P["gpu_s"], name="gpu_2")
    b = mark()
    for p in (p1, p3):
        p["gpu_busy_est"] = busy_est(per_step, p["steps"], p["wall_s"])
    p2["gpu_busy_est"] = 0.0
    phases += [p1, p2, p3]
    R["phases"] = phases
    R["construction"] = {
        "op": f"torch.mm bf16 {n}^3", "matmuls_per_step": k, "syncs_per_step": 1,
        "phases": f"{P['gpu_s']} s GPU-bound, {P['host_s']} s pure-Python (no CUDA call), {P['gpu_s']} s GPU-bound",
    }
    R["steady"] = span(a, b, name="all phases", steps=p1["steps"] + p3["steps"])
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step,
        "gpu_busy_est": busy_est(per_step, p1["steps"] + p3["steps"], R["steady"]["wall_s"]),
    }


def spin_python(stop):
    """Pure-Python arithmetic in a second thread: it holds the GIL most of the time."""
    acc = 0
    while not stop.is_set():
        for j in range(1000):
            acc += j * j


def case_gil_contention(torch, P, A):
    n, k = P["n"], P["matmuls_per_step"]
    x, y, z = matmul_setup(torch, n)

    def step(_):
        for _ in range(k):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(20):
        step(0)
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=40)
    R["warmup"] = span(w0, mark())
    per_step = g["gpu_s_per_call"] * k
    base = run_steps(step, 1.5, name="baseline_no_threads")
    base["gpu_busy_est"] = busy_est(per_step, base["steps"], base["wall_s"])
    stop = threading.Event()
    threads = [threading.Thread(target=spin_python, args=(stop,), daemon=True)
               for _ in range(int(P["python_threads"]))]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)
        sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    finally:
        stop.set()
        for t in threads:
            t.join(5)
    R["phases"] = [base]
    R["construction"] = {
        "op": f"torch.mm bf16 {n}^3", "matmuls_per_step": k, "syncs_per_step": 1,
        "python_threads": int(P["python_threads"]),
        "contender": "threading.Thread in the same process running a pure-Python loop (holds the GIL; "
                     "the GPU thread waits for it after each CUDA call that released it)",
        "switch_interval_s": sys.getswitchinterval(),
    }
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step,
        "baseline_s_per_step": round(base["wall_s"] / base["steps"], 9),
        "contended_s_per_step": round(sp["wall_s"] / sp["steps"], 9),
        "baseline_gpu_busy_est": base["gpu_busy_est"],
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
    }


def case_one_off_block(torch, P, A):
    n, k, blk = P["n"], P["matmuls_per_step"], P["block_s"]
    x, y, z = matmul_setup(torch, n)
    state = {"blocked": False, "at": None}
    half = A.seconds / 2

    def step(_):
        for _ in range(k):
            torch.mm(x, y, out=z)
        torch.cuda.synchronize()
        if not state["blocked"] and time.perf_counter() - state["t0"] >= half:
            state["blocked"] = True
            a = mark()
            # One blocking wait of the GPU thread: a lock held elsewhere,
            # here a condition nobody signals before the timeout.
            threading.Event().wait(blk)
            state["at"] = span(a, mark(), name="block")

    w0 = mark()
    state["t0"] = time.perf_counter()
    for _ in range(3):
        step(0)
    state["blocked"] = False
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=10)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "op": f"torch.mm bf16 {n}^3", "matmuls_per_step": k, "syncs_per_step": 1,
        "block": f"one threading.Event().wait({blk}) in the GPU thread half-way through the steady phase",
        "block_s": blk,
    }
    state["t0"] = time.perf_counter()
    sp = run_steps(step, A.seconds + blk, A.steps, A.max_seconds)
    R["steady"] = sp
    R["phases"] = [state["at"]] if state["at"] else []
    per_step = g["gpu_s_per_call"] * k
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": per_step,
        "block_wall_s": state["at"]["wall_s"] if state["at"] else None,
        "gpu_busy_est": busy_est(per_step, sp["steps"], sp["wall_s"]),
    }


def case_page_alloc_storm(torch, P, A):
    n, mib = P["n"], P["host_mib"]
    x, y, z = matmul_setup(torch, n)
    acc = {"touch_s": 0.0}

    def step(_):
        t = time.perf_counter()
        # Fresh anonymous memory every step, written once: the kernel
        # allocates and zeroes every page (mm_page_alloc), then frees it.
        buf = bytearray(mib * MIB)
        buf[::4096] = b"\x01" * (len(buf) // 4096)
        del buf
        acc["touch_s"] += time.perf_counter() - t
        torch.mm(x, y, out=z)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(3):
        step(0)
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=20)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "host": f"bytearray({mib} MiB) per step, one byte written per 4 KiB page, then freed",
        "pages_per_step": mib * MIB // 4096, "bytes_per_step": mib * MIB,
        "op": f"torch.mm bf16 {n}^3", "kernels_per_step": 1, "syncs_per_step": 1,
    }
    acc["touch_s"] = 0.0
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "gpu_timing": g, "gpu_s_per_step": g["gpu_s_per_call"],
        "host_alloc_touch_s": round(acc["touch_s"], 6),
        "alloc_touch_share_of_wall": round(acc["touch_s"] / sp["wall_s"], 4),
        "pages": sp["steps"] * (mib * MIB // 4096),
        "gpu_busy_est": busy_est(g["gpu_s_per_call"], sp["steps"], sp["wall_s"]),
    }


def case_idle_server(torch, P, A):
    import socket

    n, every = P["n"], P["request_every_s"]
    x, y, z = matmul_setup(torch, n)
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    stop = threading.Event()
    sent = {"n": 0}

    def client():
        while not stop.wait(every):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
                    c.sendall(b"req")
                    c.recv(16)
                    sent["n"] += 1
            except OSError:
                return

    handled = {"n": 0, "gpu_s": 0.0}

    def serve_once(conn):
        conn.recv(16)
        t = time.perf_counter()
        torch.mm(x, y, out=z)
        torch.cuda.synchronize()
        handled["gpu_s"] += time.perf_counter() - t
        handled["n"] += 1
        conn.sendall(b"ok")
        conn.close()

    torch.mm(x, y, out=z)
    torch.cuda.synchronize()
    g = gpu_time(torch, lambda: torch.mm(x, y, out=z), reps=10)
    th = threading.Thread(target=client, daemon=True)
    R["construction"] = {
        "server": "GPU thread blocks in accept() on a loopback socket; a client thread sends one request "
                  f"every {every} s; each request runs one torch.mm bf16 {n}^3 and a sync",
        "request_every_s": every, "kernels_per_request": 1,
    }
    a = mark()
    th.start()
    srv.settimeout(0.5)
    end = time.perf_counter() + A.seconds
    while time.perf_counter() < end:
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        serve_once(conn)
    b = mark()
    stop.set()
    th.join(5)
    srv.close()
    R["steady"] = span(a, b, name="serving", steps=handled["n"])
    R["derived"] = {
        "gpu_timing": g, "requests": handled["n"], "request_s": round(handled["gpu_s"], 6),
        "gpu_busy_est": busy_est(g["gpu_s_per_call"], handled["n"], R["steady"]["wall_s"]),
    }


def case_hf_generate(torch, P, A):
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(n_layer=P["layers"], n_embd=P["hidden"], n_head=P["heads"], vocab_size=8192,
                     n_positions=1024)
    torch.manual_seed(0)
    model = GPT2LMHeadModel(cfg).cuda().eval()
    ids = torch.randint(0, 8192, (P["batch"], 16), device="cuda")
    kw = {"max_new_tokens": P["new_tokens"], "min_new_tokens": P["new_tokens"], "do_sample": False,
          "pad_token_id": 0}

    def step(_):
        with torch.no_grad():
            model.generate(ids, **kw)
        torch.cuda.synchronize()

    w0 = mark()
    for _ in range(2):
        step(0)
    R["warmup"] = span(w0, mark())
    R["construction"] = {
        "model": f"GPT-2 config, {P['layers']} layers, hidden {P['hidden']}, random weights, eager",
        "generate": f"greedy, {P['new_tokens']} new tokens, batch {P['batch']}, prompt 16 tokens",
        "dataloader": None, "tokens_per_step": P["new_tokens"] * P["batch"],
    }
    sp = run_steps(step, A.seconds, A.steps, A.max_seconds)
    R["steady"] = sp
    R["derived"] = {
        "tokens": sp["steps"] * P["new_tokens"] * P["batch"],
        "tokens_per_s": round(sp["steps"] * P["new_tokens"] * P["batch"] / sp["wall_s"], 1),
        "gpu_busy_est": "small: eager decode of a small model is launch-bound",
    }


# --------------------------------------------------------------------------- main


def prepare_env(case):
    """Environment that must be set before torch is imported."""
    if case == "alloc_churn":
        os.environ["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    if case == "compile_stall":
        root = tempfile.mkdtemp(prefix="zoo-compile-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(root, "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(root, "triton")
        os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
        os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
        os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
        return root
    return None


def parse_params(case, sets):
    P = dict(DEFAULTS[case])
    for kv in sets:
        k, _, v = kv.partition("=")
        if k not in P:
            raise SystemExit(f"unknown parameter {k} for {case}: {sorted(P)}")
        d = P[k]
        P[k] = type(d)(v) if not isinstance(d, str) else v
    return P


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--case", choices=CASES)
    ap.add_argument("--seconds", type=float, default=6.0, help="steady phase length (default 6)")
    ap.add_argument("--steps", type=int, default=0, help="run exactly this many steady steps instead")
    ap.add_argument("--max-seconds", type=float, default=0.0, help="cap of a --steps run (default 3x+30)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--list", action="store_true")
    A = ap.parse_args()
    if A.list:
        for c in CASES:
            print(c, json.dumps(DEFAULTS[c]))
        return 0
    if not A.case:
        ap.error("--case is required")
    R.update({"zoo_case": A.case, "ok": False, "argv": sys.argv[1:], "pid": os.getpid(),
              "tid": threading.get_native_id(), "t_start_epoch_ns": time.time_ns(),
              "cpus": os.cpu_count(), "python": sys.version.split()[0]})
    tmp = None
    rc = 1
    try:
        P = parse_params(A.case, A.set)
        R["params"] = P
        tmp = prepare_env(A.case)
        t = time.perf_counter()
        import torch
        R["import_s"] = round(time.perf_counter() - t, 3)
        R["torch"] = torch.__version__
        R["cuda"] = torch.version.cuda
        t = time.perf_counter()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        R["cuda_init_s"] = round(time.perf_counter() - t, 3)
        R["device"] = torch.cuda.get_device_name(0)
        globals()["case_" + A.case](torch, P, A)
        R["ok"] = True
        rc = 0
    except KeyboardInterrupt:
        R["error"] = "interrupted (SIGINT, probably the driver's timeout)"
    except BaseException as e:  # noqa: BLE001
        R["error"] = repr(e)[:1000]
        R["traceback"] = traceback.format_exc()[-3000:]
        log(traceback.format_exc())
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        R["t_end_epoch_ns"] = time.time_ns()
        sys.stdout.write(json.dumps(R, default=str) + "\n")
        sys.stdout.flush()
    return rc


if __name__ == "__main__":
    sys.exit(main())
