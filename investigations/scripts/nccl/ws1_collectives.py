"""A world-size-1 NCCL job on one GPU, with a known number of each collective.

Runs torch.distributed with the NCCL backend on one rank (no network beyond
loopback) and makes, after one warm-up all-reduce: ALLREDUCES all-reduces of
BYTES bytes, BROADCASTS broadcasts and ALLGATHERS all-gathers, each followed
by a stream synchronize, then prints the counts it made. The expected rows
in a capture follow from these counts, not from the capture.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

ALLREDUCES = int(os.environ.get("ALLREDUCES", "200"))
BROADCASTS = int(os.environ.get("BROADCASTS", "20"))
ALLGATHERS = int(os.environ.get("ALLGATHERS", "20"))
BYTES = int(os.environ.get("BYTES", str(4 << 20)))

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29517")
os.environ.setdefault("RANK", "0")
os.environ.setdefault("LOCAL_RANK", "0")
os.environ.setdefault("WORLD_SIZE", "1")

torch.cuda.set_device(0)
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.ones(BYTES // 4, device="cuda", dtype=torch.float32)
dist.all_reduce(x)  # warm-up: communicator creation happens here at the latest
torch.cuda.synchronize()
t0 = time.time()
for _ in range(ALLREDUCES):
    dist.all_reduce(x)
    torch.cuda.synchronize()
for _ in range(BROADCASTS):
    dist.broadcast(x, src=0)
    torch.cuda.synchronize()
out = [torch.empty_like(x)]
for _ in range(ALLGATHERS):
    dist.all_gather(out, x)
    torch.cuda.synchronize()
elapsed = time.time() - t0
dist.destroy_process_group()
print(
    f"ws1 allreduce={ALLREDUCES + 1} broadcast={BROADCASTS} allgather={ALLGATHERS} "
    f"bytes={BYTES} elapsed_s={elapsed:.3f}",
    flush=True,
)
sys.exit(0)
