#!/bin/bash
# Every check that needs a GPU, in one call sized for a short device session:
#   1. models/bench/gpu_check.sh: the gpu-engine tests, resnet20_cifar in each precision, and
#      ResNet-50 at batch 256 in bf16 (images/sec, TFLOP/s); data-parallel gpu training over TCP;
#   2. the GPU micro-benchmarks of `rocebench probe host` (copies, launch latency, cuBLAS GEMM);
#   3. NCCL sweeps of the five collectives on one GPU (ci/gpu/one_gpu.json), every element checked;
#   4. a two-rank NCCL step on one GPU, which must record skip (a rank per GPU);
#   5. (only when named) profile: per-layer GPU time of ResNet-50, bf16 at batch 256 and fp32 at 128;
#      zoo: a few bf16 steps of every zoo model at batch 64 (images/sec, a finite loss), and
#      resnet20_cifar's per-layer time in fp32 and bf16;
#      unseen: 8 unseen ranks of the cpu engine with a CPU each (issue #42's whole-step target; the
#      device machine's cores, not its GPU): models/bench/predict_unseen.sh, as root.
# Usage: ci/gpu/check.sh [BUILD_DIR | BUNDLE.tar.xz] [PARTS, default "models probe nccl"; also profile, zoo, unseen]
#   (a bundle comes from ci/gpu/pack.sh; its CUDA, cuBLAS, cuDNN and NCCL libraries are found on
#   this machine)
# Output: a summary on stdout; records and logs in a temp dir, packed into $OUT/gpu-check.tar.gz
#   when OUT is set (a device runner brings back only a few files).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
out=${CHECK_DIR:-$(mktemp -d)}
mkdir -p "$out"
[[ -n ${OUT:-} ]] && trap 'tar -czf "$OUT/gpu-check.tar.gz" -C "$out" .' EXIT
build=${1:-build} parts=" ${2:-models probe nccl} "
if [[ $build == *.tar.xz ]]; then
  unpacked=$(mktemp -d)
  tar -xJf "$build" -C "$unpacked" || exit 3
  build=$unpacked/bundle
  export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The CUDA stack the binaries want, wherever this machine keeps it (toolkit or Python wheels). cuBLAS is
  # loaded on first use, so ldd does not list it: its name is read from the binary.
  for soname in $({ ldd "$build/harness/rocebench" "$build/models/models_gpu_tests" | awk '/not found/ {print $1}'
                    grep -aoE -m1 'libcublas\.so\.[0-9]+' "$build/harness/rocebench"; } | sort -u); do
    found=$(find /usr/local /opt /usr/lib -name "$soname" 2>/dev/null | head -1)
    [[ -n $found ]] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$found") || echo "check.sh: $soname not found"
  done
  ldd "$build/harness/rocebench" | grep -E 'cudnn|nccl|cublas|cudart|not found'
fi
bin=$build/harness/rocebench
status=0

if [[ $parts == *" models "* ]]; then
echo "== models"
OUT=$out/models models/bench/gpu_check.sh "$build" || status=1
fi

if [[ $parts == *" profile "* ]]; then
  for run in "bf16 256" "fp32 128"; do
    set -- $run
    echo "== ResNet-50 $1, batch $2: time per layer"
    timeout 180 "$bin" train --engine gpu --model resnet50 --precision "$1" --batch "$2" --iters 10 --warmup 3 --profile \
      --results-dir "$out/profile-$1" >"$out/profile-$1.log" 2>&1 || { echo "profile $1: exit $?"; status=1; }
    cat "$out/profile-$1.log"
  done
fi

if [[ $parts == *" zoo "* ]]; then
  echo "== every zoo model, bf16, batch 64"
  for model in $("$bin" train --list | awk '$2 ~ /^[0-9]+$/ {print $1}'); do
    timeout 120 "$bin" train --engine gpu --model "$model" --precision bf16 --batch 64 --iters 5 --warmup 2 \
      --results "$out/zoo" 2>&1 | grep "^$model gpu " || { echo "zoo $model: exit $?"; status=1; }
  done
  for precision in fp32 bf16; do
    echo "== resnet20_cifar $precision, batch 128: time per layer"
    timeout 60 "$bin" train --engine gpu --model resnet20_cifar --precision "$precision" --batch 128 --iters 20 --warmup 5 \
      --profile --results "$out/profile-cifar" 2>&1 | grep -v '^rocebench run:' | awk 'NR <= 14' || { echo "profile resnet20 $precision: exit $?"; status=1; }
  done
fi

if [[ $parts == *" unseen "* ]]; then
  echo "== 8 unseen ranks, cpu engine, $(nproc) CPUs: predicted from 1, 2 and 4, then measured"
  timeout 400 models/bench/predict_unseen.sh "$bin" --engine cpu 2>&1 | tee "$out/unseen.log" || { echo "unseen: exit $?"; status=1; }
fi

if [[ $parts == *" models "* ]]; then
echo "== data-parallel training of the gpu engine over TCP (buckets through host memory), 1 and 2 ranks on this GPU"
timeout 180 "$bin" train --engine gpu --model resnet20_cifar --batch 64 --world-sizes 1,2 --iters 20 --warmup 3 \
  --results-dir "$out/dp" >"$out/dp.log" 2>&1 || { echo "gpu data parallel: exit $?"; status=1; }
grep '^# ' "$out/dp.log"
fi

if [[ $parts == *" probe "* ]]; then
echo "== probe host: GPU micro-benchmarks"
timeout 120 "$bin" probe host --filter gpu_ --repetitions 3 --min-time 0.05 --results "$out/probe_host" \
  >"$out/probe_host.log" 2>&1 || { echo "probe host: exit $?"; status=1; }
grep -E 'gpu_' "$out/probe_host.log" | grep -v -E '_(mean|stddev|cv)' | head -40
fi

if [[ $parts == *" nccl "* ]]; then
echo "== NCCL on one GPU"
timeout 240 "$bin" run ci/gpu/one_gpu.json --results-dir "$out/nccl" >"$out/nccl.log" 2>&1 || { echo "nccl plan: exit $?"; status=1; }
tail -8 "$out/nccl.log"
results() {  # RESULTS_JSONL: a line per result record
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") != "result":
        continue
    p, m = r["params"], r.get("metrics", {})
    print(f"{r['step']:<28}{p.get('bytes', ''):>11}{'' if 'inplace' not in p else ' in' if p['inplace'] else ' out':>4}"
          f"{r['status']:>6}  algbw {m.get('algbw_GBps', '-')}  time_us {m.get('time_us', '-')}  wrong {m.get('wrong', '-')}"
          f"  {r.get('reason', '')}")
PY
}
results "$out/nccl/results.jsonl"

echo "== two ranks on one GPU must skip"
timeout 120 "$bin" allreduce --collective nccl --ranks 2 -b 8 -e 1K --results-dir "$out/nccl2" >"$out/nccl2.log" 2>&1 ||
  { echo "nccl 2 ranks: exit $?"; status=1; }
results "$out/nccl2/results.jsonl"
fi
echo "check.sh: exit $status"
exit $status
