#!/usr/bin/python3
"""PyTorch reference for `rocebench train`: the same network (resnet20_cifar: ResNet-20 with 1x1
projection shortcuts; resnet50: torchvision's), a fixed random batch, SGD with momentum 0.9 and
weight decay 1e-4 at lr 0.01, warm-up steps then timed steps. Prints one JSON line: images_per_s and
per-step times. --bf16 runs forward and loss under torch.autocast(bfloat16): fp32 weights, bf16
convolutions. --device cuda runs channels-last (NHWC, as rocebench's gpu engine) with cuDNN's
benchmark mode (its algorithm search, as rocebench's) and waits for the GPU at the end of each step."""
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
    p.add_argument("--iters", type=int, default=20, help="timed steps after the warm-up (rocebench train --iters)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--model", choices=["resnet20_cifar", "resnet50"], default="resnet20_cifar")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    if a.model == "resnet50":
        import torchvision
        model, classes, side, expected = torchvision.models.resnet50(), 1000, 224, 25557032
    else:
        model, classes, side, expected = resnet20_cifar(), 10, 32, 272474
    params = sum(t.numel() for t in model.parameters())
    assert params == expected, params  # what rocebench's zoo test counts
    fmt = torch.channels_last if a.device == "cuda" else torch.contiguous_format
    torch.backends.cudnn.benchmark = True
    model = model.to(a.device, memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    images = torch.randn(a.batch, 3, side, side, device=a.device).to(memory_format=fmt)
    labels = torch.randint(0, classes, (a.batch,), device=a.device)
    loss_fn = nn.CrossEntropyLoss()
    times = []
    for i in range(a.warmup + a.iters):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.bf16):
            loss = loss_fn(model(images), labels)
        loss.backward()
        opt.step()
        if a.device == "cuda":
            torch.cuda.synchronize()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt * 1e3)
    print(json.dumps({"torch": torch.__version__, "model": a.model, "device": a.device, "precision": "bf16" if a.bf16 else "fp32", "threads": a.threads, "batch": a.batch, "n": len(times),
                      "images_per_s": a.batch * len(times) / (sum(times) / 1e3),
                      "step_time_ms_p50": statistics.median(times), "min": min(times), "max": max(times)}))


if __name__ == "__main__":
    main()
