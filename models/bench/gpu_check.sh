#!/bin/bash
# Everything the gpu engine needs a GPU for, in one call (sized for a short device session):
#   1. builds rocebench and models_gpu_tests (an existing build dir is reused; a packed one from
#      ci/gpu/pack.sh, which has binaries and no build.ninja, is used as it is),
#   2. runs models_gpu_tests: gpu vs cpu forward/backward/SGD on small graphs (fp32 tight, tf32,
#      bf16, fp16 loose), gradient announcement, fp16 overflow skip, ResNet-20 learning a batch,
#   3. trains resnet20_cifar for a few steps in fp32, tf32, bf16 and fp16,
#   4. measures ResNet-50 at batch 256 in bf16: images/sec, step-time spread, achieved TFLOP/s
#      (3 x forward FLOPs per image from the graph) and its share of the chip's peak,
#   5. where python3 has torch, torchvision and a GPU: PyTorch on the same model, batch and
#      precision right after (models/bench/pytorch_train.py), and rocebench's ratio to it.
# Usage: models/bench/gpu_check.sh [BUILD_DIR=build] [STEPS=30] [WARMUP=10]
#   PEAK_TFLOPS: the chip's dense bf16 peak for the ratio (default 989, H100/H200 SXM).
# Output: a summary on stdout; records in $OUT (when set, e.g. the device runner's) or a temp dir.
set -uo pipefail
build=${1:-build} iters=${2:-30} warmup=${3:-10}
peak=${PEAK_TFLOPS:-989}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
status=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || echo "nvidia-smi failed"

echo "== build ($build)"
if [[ ! -f $build/build.ninja && -x $build/harness/rocebench && -x $build/models/models_gpu_tests ]]; then
  echo "prebuilt binaries: not building"
elif [[ ! -f $build/build.ninja ]]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROCEBENCH_WITH_CUDA=ON >"$out/configure.log" 2>&1 ||
    { tail -30 "$out/configure.log"; exit 3; }
fi
if [[ -f $build/build.ninja ]]; then
  cmake --build "$build" -j"$(nproc)" --target rocebench models_gpu_tests >"$out/build.log" 2>&1 ||
    { tail -40 "$out/build.log"; exit 3; }
fi
bin=$build/harness/rocebench

echo "== models_gpu_tests"
timeout "${TEST_TIMEOUT:-300}" "$build/models/models_gpu_tests" --gtest_output="json:$out/gpu_tests.json" >"$out/gpu_tests.log" 2>&1 || status=1
grep -E '^\[ +(OK|FAILED|SKIPPED) +\]|Failure|Expected|Which is|actual|gradient of|param ' "$out/gpu_tests.log" | head -60
tail -3 "$out/gpu_tests.log"

train() {  # MODEL PRECISION BATCH STEPS WARMUP: one record appended to $out/train.jsonl
  OMP_NUM_THREADS=4 timeout "${TRAIN_TIMEOUT:-300}" "$bin" train --engine gpu --model "$1" --precision "$2" --batch "$3" --iters "$4" \
    --warmup "$5" --results-dir "$out/train.run" >>"$out/train.log" 2>&1 || { echo "train $*: exit $?"; status=1; }
  grep -s '"step":"models.train"' "$out/train.run/results.jsonl" >>"$out/train.jsonl"
  rm -rf "$out/train.run"
}

echo "== resnet20_cifar, a few steps per precision"
for p in fp32 tf32 bf16 fp16; do train resnet20_cifar "$p" 128 10 3; done

echo "== resnet50, batch 256, bf16 ($iters timed steps after $warmup)"
train resnet50 bf16 256 "$iters" "$warmup"

python3 - "$out/train.jsonl" "$peak" <<'EOF'
import json, sys
peak = float(sys.argv[2])
print(f"{'model':<16}{'prec':<6}{'batch':>6}{'status':>8}{'images/s':>11}{'step ms p50':>13}{'min..max, sd':>22}{'n':>4}"
      f"{'TFLOP/s':>9}{'of peak':>9}{'loss':>9}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") != "result":
        continue
    p, m, s = r["params"], r.get("metrics", {}), r.get("samples", {})
    if r["status"] != "ok":
        print(f"{p['model']:<16}{p['precision']:<6}{p['batch']:>6}{r['status']:>8}  {r.get('reason', '')}")
        continue
    spread = f"{s.get('min', 0):.1f}..{s.get('max', 0):.1f} sd {s.get('stdev', 0):.2f}"
    print(f"{p['model']:<16}{p['precision']:<6}{p['batch']:>6}{r['status']:>8}{m['images_per_s']:>11.1f}"
          f"{m['step_time_ms_p50']:>13.2f}{spread:>22}{s.get('n', 0):>4}{m['tflops']:>9.1f}"
          f"{100 * m['tflops'] / peak:>8.1f}%{m.get('loss', float('nan')):>9.3f}")
print(f"TFLOP/s = 3 x forward FLOPs/image x images/s; peak taken as {peak} TFLOP/s dense bf16 (PEAK_TFLOPS)")
EOF
if python3 -c 'import torch, torchvision; assert torch.cuda.is_available()' 2>/dev/null; then
  echo "== PyTorch, same model, batch and precision"
  timeout "${TRAIN_TIMEOUT:-300}" python3 models/bench/pytorch_train.py --device cuda --model resnet50 --bf16 --batch 256 \
    --iters "$iters" --warmup "$warmup" >"$out/pytorch.json" 2>"$out/pytorch.log" || { tail -5 "$out/pytorch.log"; status=1; }
  python3 - "$out/train.jsonl" "$out/pytorch.json" <<'EOF'
import json, sys
ours = [json.loads(l) for l in open(sys.argv[1])]
ours = [r for r in ours if r.get("kind") == "result" and r["params"]["model"] == "resnet50" and r["status"] == "ok"]
theirs = json.loads(open(sys.argv[2]).read())
print(f"PyTorch {theirs['torch']}: {theirs['images_per_s']:.1f} images/s, step p50 {theirs['step_time_ms_p50']:.2f} ms "
      f"(min {theirs['min']:.2f}, max {theirs['max']:.2f}, n {theirs['n']})")
if ours:
    print(f"rocebench / PyTorch images/s: {ours[-1]['metrics']['images_per_s'] / theirs['images_per_s']:.3f}")
EOF
fi
echo "records and logs: $out"
exit $status
