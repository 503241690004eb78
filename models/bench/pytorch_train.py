#!/usr/bin/python3
"""PyTorch CPU reference for `rocebench train --model resnet20_cifar`: the same network (ResNet-20,
1x1 projection shortcuts), a fixed random batch, SGD with momentum 0.9 and weight decay 1e-4 at
lr 0.01, warm-up steps then timed steps. Prints one JSON line: images_per_s and per-step times.
--bf16 runs forward and loss under torch.autocast("cpu", bfloat16): fp32 weights, bf16 convolutions."""
import argparse
import json
import statistics
import time

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
            nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return torch.relu(self.body(x) + self.shortcut(x))


def resnet20_cifar():
    layers = [nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU()]
    cin = 16
    for stage in range(3):
        for b in range(3):
            cout = 16 << stage
            layers.append(Block(cin, cout, 2 if b == 0 and stage > 0 else 1))
            cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]
    return nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = resnet20_cifar()
    params = sum(t.numel() for t in model.parameters())
    assert params == 272474, params  # what rocebench's zoo test counts by hand
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(a.batch, 3, 32, 32)
    labels = torch.randint(0, 10, (a.batch,))
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt * 1e3)
    print(json.dumps({"torch": torch.__version__, "precision": "bf16" if a.bf16 else "fp32", "threads": a.threads, "batch": a.batch, "n": len(times),
                      "images_per_s": a.batch * len(times) / (sum(times) / 1e3),
                      "step_time_ms_p50": statistics.median(times), "min": min(times), "max": max(times)}))


if __name__ == "__main__":
    main()
