"""Stand-in training loop with a cause of GPU idleness no rule is written for:
every step starts a helper process and waits for it (a monitoring command
run in the loop), in the function ingero_run_helper.

Usage: python3 spawn_per_step.py LIB_DIR SECONDS [HELPER_SECONDS]

Each step makes 20 cudaLaunchKernel calls and one cudaStreamSynchronize on
the stand-in CUDA runtime in LIB_DIR, then runs `sleep HELPER_SECONDS`
(default 0.03) and waits for it. Prints one JSON line: the steps made, the
helpers started and the time spent waiting for them (the construction)."""
import ctypes
import json
import os
import subprocess
import sys
import time


class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]


def load(lib_dir):
    # The stand-in runtime finds the driver already loaded (as the real one does).
    ctypes.CDLL(os.path.join(lib_dir, "libcuda.so.1"), mode=ctypes.RTLD_GLOBAL)
    rt = ctypes.CDLL(os.path.join(lib_dir, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
    rt.cudaLaunchKernel.argtypes = [
        ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p,
    ]
    rt.cudaStreamSynchronize.argtypes = [ctypes.c_void_p]
    return rt


def gpu_work(rt):
    for _ in range(20):
        rt.cudaLaunchKernel(None, Dim3(64, 1, 1), Dim3(128, 1, 1), None, 0, None)
    rt.cudaStreamSynchronize(None)


def ingero_run_helper(seconds):
    subprocess.run(["sleep", str(seconds)], check=True)


def main():
    lib_dir, seconds = sys.argv[1], float(sys.argv[2])
    helper_s = float(sys.argv[3]) if len(sys.argv) > 3 else 0.03
    rt = load(lib_dir)
    steps, waited = 0, 0.0
    t0 = time.time_ns()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        gpu_work(rt)
        t = time.perf_counter()
        ingero_run_helper(helper_s)
        waited += time.perf_counter() - t
        steps += 1
    print(json.dumps({
        "steps": steps, "helpers_started": steps, "helper_wait_s": round(waited, 6),
        "t0_epoch_ns": t0, "t1_epoch_ns": time.time_ns(), "pid": os.getpid(),
    }), flush=True)


if __name__ == "__main__":
    main()
