#!/bin/bash
# CPU images/sec of rocebench's oneDNN engine and of PyTorch on the same model (ResNet-20 for CIFAR),
# batch and thread count, in the same run, and their ratio (rocebench / PyTorch).
# Usage: models/bench/compare_pytorch.sh ROCEBENCH_BINARY [BATCH=64] [THREADS=1] [STEPS=20] [WARMUP=5]
set -euo pipefail
bin=${1:?usage: $0 ROCEBENCH_BINARY [BATCH] [THREADS] [STEPS] [WARMUP]}
batch=${2:-64} threads=${3:-1} steps=${4:-20} warmup=${5:-5}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp) && trap 'rm -f "$out"' EXIT

OMP_NUM_THREADS=$threads "$bin" train --model resnet20_cifar --engine cpu --batch "$batch" --steps "$steps" \
  --warmup "$warmup" --out "$out"
# Debian's python3-torch lives under /usr/bin/python3, not a pyenv python on PATH.
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  echo "PyTorch comparison skipped: python3-torch is not installed (apt-get install python3-torch)"
  exit 0
fi
torch_json=$(OMP_NUM_THREADS=$threads /usr/bin/python3 "$here/pytorch_train.py" --batch "$batch" --threads "$threads" \
  --steps "$steps" --warmup "$warmup")
echo "pytorch: $torch_json"
/usr/bin/python3 - "$out" "$torch_json" <<'PY'
import json, sys
ours = json.loads(open(sys.argv[1]).readline())["metrics"]["images_per_s"]
theirs = json.loads(sys.argv[2])["images_per_s"]
print(f"rocebench {ours:.1f} images/s, pytorch {theirs:.1f} images/s, ratio {ours / theirs:.2f}")
PY
