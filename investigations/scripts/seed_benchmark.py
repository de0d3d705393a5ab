"""The DataLoader starvation benchmark (pytorch/pytorch#154318), as recorded.

7,000,000 x 100 float32 samples, an MLP 100-512-512-10, batch 1,048,576.
Runs one epoch of inference three ways and prints each wall time:
  direct       pre-shuffled tensor slices moved with .cuda()
  dataloader   DataLoader(X, batch_size=1_048_576, shuffle=True)
  workers4     the same DataLoader with num_workers=4
Usage: python seed_benchmark.py [--samples N] [--only direct,dataloader,workers4]
"""
import argparse
import time

import torch
from torch.utils.data import DataLoader


def mlp():
    return torch.nn.Sequential(
        torch.nn.Linear(100, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 512), torch.nn.ReLU(),
        torch.nn.Linear(512, 10),
    ).cuda()


def run_direct(model, x, batch):
    perm = torch.randperm(x.shape[0])
    xs = x[perm]
    for i in range(0, xs.shape[0], batch):
        model(xs[i:i + batch].cuda())
    torch.cuda.synchronize()


def run_loader(model, x, batch, workers):
    loader = DataLoader(x, batch_size=batch, shuffle=True, num_workers=workers)
    for b in loader:
        model(b.cuda())
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=7_000_000)
    ap.add_argument("--batch", type=int, default=1_048_576)
    ap.add_argument("--only", default="direct,dataloader,workers4")
    args = ap.parse_args()
    torch.manual_seed(0)
    x = torch.randn(args.samples, 100)
    model = mlp()
    with torch.no_grad():
        model(x[:1024].cuda())
        torch.cuda.synchronize()
        for name in args.only.split(","):
            t = time.perf_counter()
            if name == "direct":
                run_direct(model, x, args.batch)
            elif name == "dataloader":
                run_loader(model, x, args.batch, 0)
            elif name == "workers4":
                run_loader(model, x, args.batch, 4)
            else:
                raise SystemExit(f"unknown variant {name}")
            print(f"{name} {time.perf_counter() - t:.3f} s", flush=True)


if __name__ == "__main__":
    main()
