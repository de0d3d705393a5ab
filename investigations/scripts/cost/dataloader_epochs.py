"""The seed benchmark's DataLoader phase, epoch after epoch in one process,
for measuring what a capture costs on it: the dataset and the model are
built once, then each epoch waits for a line on stdin (so the caller can
attach or detach a capture between epochs) and prints one JSON line
{"epoch", "start_ns", "end_ns", "seconds", "user_s", "system_s"}: the
wall time, and the CPU time the process (all its threads, and children
reaped during the epoch) spent in user space and in the kernel. A capture's
kernel-side work on the job (its tracepoint and uprobe programs, the
uprobe traps) runs on the job's own threads and shows in system_s.

Each line also carries "main" and "host", which tell apart three ways a
capture can lengthen an epoch without adding to system_s:
  main: the epoch's main thread (it runs the DataLoader loop): its user and
        system ticks, its time on a CPU and its time runnable but waiting
        for one (/proc schedstat, ns), its involuntary switches and CPU
        migrations. More wait_ns: contention for CPUs; more run_ns at the
        same work: the job's own code ran slower where it ran.
  host: the machine's CPU time by kind over the epoch (/proc/stat ticks:
        user, system, irq, softirq, steal, idle) and its interrupts
        (all CPUs), page faults, huge pages given or refused at a fault
        and compaction stalls (/proc/vmstat). steal is time the
        hypervisor gave the virtual CPUs to someone else.
With COST_NO_THP=1 the process opts out of transparent huge pages
(prctl PR_SET_THP_DISABLE) before it allocates anything.
Usage: dataloader_epochs.py [SAMPLES] [BATCH]
"""
import json
import os
import sys
import threading
import time

import torch

sys.path.insert(0, __file__.rsplit("/", 2)[0])
from seed_benchmark import mlp, run_loader  # noqa: E402


HOST_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
# Memory events of the machine (/proc/vmstat): page faults, and transparent
# huge pages given or refused at a fault and the compaction stalls behind
# them, which make one epoch's fresh 400 MB batch cost more than another's.
VM_FIELDS = ("pgfault", "thp_fault_alloc", "thp_fault_fallback", "compact_stall")


def read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def main_thread() -> dict:
    """The calling thread's counters (see the module doc)."""
    task = f"/proc/self/task/{threading.get_native_id()}"
    stat = read(f"{task}/stat").rpartition(")")[2].split()
    sched = read(f"{task}/schedstat").split()
    status = dict(l.split(":\t", 1) for l in read(f"{task}/status").splitlines() if ":\t" in l)
    migrations = 0
    for line in read(f"{task}/sched").splitlines():
        if line.startswith("se.nr_migrations"):
            migrations = int(line.split()[-1])
    return {
        "user_ticks": int(stat[11]) if len(stat) > 12 else 0,
        "system_ticks": int(stat[12]) if len(stat) > 12 else 0,
        "run_ns": int(sched[0]) if len(sched) > 1 else 0,
        "wait_ns": int(sched[1]) if len(sched) > 1 else 0,
        "involuntary": int(status.get("nonvoluntary_ctxt_switches", "0").strip() or 0),
        "migrations": migrations,
    }


def host() -> dict:
    """The machine's CPU ticks by kind (first line of /proc/stat) and its
    interrupts so far, all sources and CPUs (the "intr" line)."""
    lines = read("/proc/stat").splitlines()
    values = lines[0].split()[1:] if lines else []
    out = {k: int(v) for k, v in zip(HOST_FIELDS, values)}
    for line in lines:
        if line.startswith("intr "):
            out["interrupts"] = int(line.split()[1])
    for line in read("/proc/vmstat").splitlines():
        key, _, value = line.partition(" ")
        if key in VM_FIELDS:
            out[key] = int(value)
    return out


def delta(after: dict, before: dict) -> dict:
    return {k: after[k] - before.get(k, 0) for k in after}


def main() -> None:
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1_048_576
    if os.environ.get("COST_NO_THP") == "1":
        import ctypes
        # PR_SET_THP_DISABLE = 41
        if ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0) != 0:
            print("prctl(PR_SET_THP_DISABLE) failed", file=sys.stderr)
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
            m0, h0 = main_thread(), host()
            t0 = time.perf_counter()
            start_ns = time.time_ns()
            run_loader(model, x, batch, 0)
            seconds = time.perf_counter() - t0
            c1 = os.times()
            m1, h1 = main_thread(), host()
            user = (c1.user - c0.user) + (c1.children_user - c0.children_user)
            system = (c1.system - c0.system) + (c1.children_system - c0.children_system)
            print(json.dumps({"epoch": epoch, "start_ns": start_ns, "end_ns": time.time_ns(),
                              "seconds": round(seconds, 4), "user_s": round(user, 3),
                              "system_s": round(system, 3), "main": delta(m1, m0),
                              "host": delta(h1, h0)}), flush=True)
            epoch += 1


if __name__ == "__main__":
    main()
