#!/usr/bin/python3
"""PyTorch DistributedDataParallel (gloo, CPU) as the peer of `rocebench train --world-sizes`: the
same network (pytorch_train.py's resnet20_cifar), batch per rank, bucket size (bucket_cap_mb; DDP's
first bucket is 1 MiB, as rocebench's), SGD with momentum 0.9 and weight decay 1e-4, a fixed random
batch per rank (seeded by rank), warm-up steps then timed steps. A step takes as long as its slowest
rank (the step times are max-reduced over the ranks, as rocebench does). Rank 0 prints one JSON line:
images_per_s (all ranks) and the per-step times.

Started once per rank with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT in the environment (in an
emulated host, also GLOO_SOCKET_IFNAME=eth0: gloo binds the address its hostname resolves to)."""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_train import resnet20_cifar  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--iters", type=int, default=20, help="timed steps after the warm-up (rocebench train --iters)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bucket-mb", type=float, default=25)
    p.add_argument("--timeout-s", type=float, default=120)
    a = p.parse_args()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=__import__("datetime").timedelta(seconds=a.timeout_s))
    torch.manual_seed(1)  # every rank the same initial parameters
    model = resnet20_cifar()
    ddp = DistributedDataParallel(model, bucket_cap_mb=a.bucket_mb) if world > 1 else model
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_fn = nn.CrossEntropyLoss()
    g = torch.Generator().manual_seed(1 + 7919 * rank)  # its own batch
    images = torch.randn(a.batch, 3, 32, 32, generator=g)
    labels = torch.randint(0, 10, (a.batch,), generator=g)
    times = []
    for step in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss_fn(ddp(images), labels).backward()
        opt.step()
        if step >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    slowest = torch.tensor(times, dtype=torch.float64)
    if world > 1:
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if rank == 0:
        ms = slowest.tolist()
        print(json.dumps({"world": world, "images_per_s": a.batch * world * len(ms) / (sum(ms) / 1e3),
                          "step_ms_p50": statistics.median(ms), "step_ms": ms}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
