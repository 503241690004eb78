#!/bin/bash
# CPU images/sec of rocebench's oneDNN engine and of PyTorch on the same model (ResNet-20 for CIFAR),
# batch and thread count, in the same run: rounds interleave every configuration so machine load
# hits them alike, and each round's ratio is against the PyTorch run next to it.
#   fp32: rocebench blocked layouts, rocebench plain NCHW, PyTorch fp32
#   bf16: rocebench bf16 (blocked), PyTorch bf16 autocast  (only where the CPU has bf16)
# Usage: models/bench/compare_pytorch.sh ROCEBENCH_BINARY [BATCH=64] [THREADS=1] [STEPS=20] [WARMUP=5] [ROUNDS=3]
# ROCEBENCH_BINARY: build/harness/rocebench.
set -euo pipefail
bin=${1:?usage: $0 ROCEBENCH_BINARY [BATCH] [THREADS] [STEPS] [WARMUP] [ROUNDS]}
batch=${2:-64} threads=${3:-1} iters=${4:-20} warmup=${5:-5} rounds=${6:-3}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d) && trap 'rm -rf "$out"' EXIT

# Debian's python3-torch lives under /usr/bin/python3, not a pyenv python on PATH.
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
have_bf16=1
OMP_NUM_THREADS=1 "$bin" train --model resnet20_cifar --precision bf16 --batch 1 --iters 1 --warmup 0 \
  --results-dir "$out/bf16.run" >/dev/null 2>&1 || have_bf16=0

ours() {  # NAME ARGS...: one rocebench run, its record appended to $out/NAME.jsonl
  local name=$1; shift
  OMP_NUM_THREADS=$threads "$bin" train --model resnet20_cifar --engine cpu --batch "$batch" --iters "$iters" \
    --warmup "$warmup" --results-dir "$out/$name.run" "$@" >/dev/null 2>"$out/$name.err" || {
    echo "rocebench train failed:" >&2; tail -5 "$out/$name.err" >&2; exit 1; }
  grep '"step":"models.train"' "$out/$name.run/results.jsonl" >>"$out/$name.jsonl"
  rm -rf "$out/$name.run"
}
theirs() {  # NAME ARGS...: one PyTorch run, its JSON line appended to $out/NAME.jsonl
  local name=$1; shift
  OMP_NUM_THREADS=$threads /usr/bin/python3 "$here/pytorch_train.py" --batch "$batch" --threads "$threads" \
    --iters "$iters" --warmup "$warmup" "$@" >>"$out/$name.jsonl"
}

for ((r = 1; r <= rounds; r++)); do
  ours blocked_fp32
  ours plain_fp32 --layout plain
  ((have_torch)) && theirs torch_fp32
  if ((have_bf16)); then
    ours blocked_bf16 --precision bf16
    ((have_torch)) && theirs torch_bf16 --bf16
  fi
  echo "round $r of $rounds done" >&2
done
((have_torch)) || echo "PyTorch comparison skipped: python3-torch is not installed (apt-get install python3-torch)"
((have_bf16)) || echo "bf16 skipped: rocebench reports no bf16 on this CPU"

/usr/bin/python3 - "$out" "$batch" "$threads" "$iters" <<'PY'
import json, os, statistics, sys
out, batch, threads, iters = sys.argv[1], *sys.argv[2:]
def rates(name):
    path = os.path.join(out, name + ".jsonl")
    if not os.path.exists(path):
        return []
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return [r["metrics"]["images_per_s"] if "metrics" in r else r["images_per_s"] for r in rows]
def line(name, xs):
    if xs:
        print(f"  {name:<28} median {statistics.median(xs):8.1f} images/s  (min {min(xs):.1f}, max {max(xs):.1f}, "
              f"n {len(xs)} runs of {iters} steps)")
def ratio(a, b, label):
    xs, ys = rates(a), rates(b)
    if xs and ys:
        rs = [x / y for x, y in zip(xs, ys)]
        print(f"  {label:<28} median {statistics.median(rs):.2f}  per round: {', '.join(f'{r:.2f}' for r in rs)}")
print(f"resnet20_cifar, batch {batch}, {threads} thread(s):")
for name, label in [("blocked_fp32", "rocebench fp32 blocked"), ("plain_fp32", "rocebench fp32 plain NCHW"),
                    ("torch_fp32", "pytorch fp32"), ("blocked_bf16", "rocebench bf16 blocked"),
                    ("torch_bf16", "pytorch bf16 autocast")]:
    line(label, rates(name))
print("ratios (same round):")
ratio("blocked_fp32", "torch_fp32", "rocebench/pytorch fp32")
ratio("blocked_fp32", "plain_fp32", "blocked/plain fp32")
ratio("blocked_bf16", "torch_bf16", "rocebench/pytorch bf16")
ratio("blocked_bf16", "blocked_fp32", "rocebench bf16/fp32")
PY
