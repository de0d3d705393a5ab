"""Host-to-device copies from pageable memory, then from pinned memory.

Copies a 256 MiB batch ROUNDS times each way with non_blocking=True and
synchronises after each copy; prints effective bandwidth per phase.
Usage: python pageable_pinned.py [--mib 256] [--rounds 40]
"""
import argparse
import time

import torch


def phase(name, src, dst, rounds):
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(rounds):
        dst.copy_(src, non_blocking=True)
        torch.cuda.synchronize()
    dt = time.perf_counter() - t
    gb = src.numel() * src.element_size() * rounds / 1e9
    print(f"{name} {dt:.3f} s {gb / dt:.1f} GB/s", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args()
    n = args.mib * 1024 * 1024 // 4
    pageable = torch.randn(n)
    pinned = torch.randn(n).pin_memory()
    dst = torch.empty(n, device="cuda")
    time.sleep(1.0)
    phase("pageable", pageable, dst, args.rounds)
    time.sleep(1.0)
    phase("pinned", pinned, dst, args.rounds)


if __name__ == "__main__":
    main()
