#!/usr/bin/env bash
# Data-parallel training, measured against what users would reach for and against its own prediction,
# in the same run, interleaved round by round:
#   ddp      rocebench's cpu engine (`train --world-sizes`, ring over TCP, 25 MiB buckets) against
#            PyTorch DistributedDataParallel with gloo (Debian's python3-torch, pytorch_ddp.py): the same
#            network (resnet20_cifar), batch per rank, bucket size and thread count, at each world
#            size; the ratio of images/s is taken within a round. Target: >= 1.0 at 1, 2 and 4 ranks.
#   predict  the replay engine on a shipped ResNet-50 timeline at 1, 2, 4 ranks: measured step time
#            against the prediction (one rank's timeline + an alpha + beta*bytes bucket cost fitted in
#            the same run), with 25 MiB buckets and with one bucket after backward (bucket_mb 0), and
#            how much of the exposed communication the buckets hide. Target: within 10%; >= 50% hidden.
#            --replay-model/--replay-batch name the timeline's model and batch; --bucket-mb MB sets
#            every bucket's size, the first included (default: DDP's 1 MiB, then 25 MiB).
#   overhead the trainer at world size 1 (`train --world-sizes 1`: buckets and communication thread set
#            up, nothing to reduce) against plain `train`, same engine, model, batch and threads,
#            alternating within each round. Target: images/s ratio >= 0.98. Use with --ranks 1.
# With --hosts, both run on emulated hosts (ci/testbeds/netns, one rank per host, --rate links; needs
# root), else on loopback.
# usage: scaling_vs_ddp.sh ROCEBENCH [--part ddp|predict|both|overhead] [--rounds 3] [--ranks "1 2 4"]
#                         [--batch 16] [--iters 20] [--warmup 3] [--hosts] [--rate 1gbit]
#                         [--timeline cpu-resnet50-fp32-b2] [--replay-model resnet50] [--replay-batch 2]
#                         [--bucket-mb MB]
set -euo pipefail
rocebench=$(realpath "${1:?usage: scaling_vs_ddp.sh ROCEBENCH [options]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../../ci/testbeds/netns/netns.sh
part=both rounds=3 rank_counts="1 2 4" batch=16 iters=20 warmup=3 hosts=0 rate=1gbit timeline=cpu-resnet50-fp32-b2
replay_model=resnet50 replay_batch=2 buckets=()
while (($#)); do
  case $1 in
    --part) part=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --ranks) rank_counts=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --hosts) hosts=1; shift ;;
    --rate) rate=$2; shift 2 ;;
    --timeline) timeline=$2; shift 2 ;;
    --replay-model) replay_model=$2; shift 2 ;;
    --replay-batch) replay_batch=$2; shift 2 ;;
    --bucket-mb) buckets+=(--bucket-mb "$2" --first-bucket-mb "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
out=$(mktemp -d)
cleanup() {
  ((hosts)) && bash "$netns" down >/dev/null 2>&1 || true
  rm -rf "$out"
}
trap cleanup EXIT
largest=0
for n in $rank_counts; do ((n > largest)) && largest=$n; done
world_sizes=$(echo $rank_counts | tr ' ' ',')
placement=(--ranks "$largest")
if ((hosts)); then
  bash "$netns" down >/dev/null 2>&1 || true
  hostsfile=$(bash "$netns" up "$largest" --rate "$rate")
  placement+=(--netns "$hostsfile")
  master=$(awk 'NR == 1 {print $2}' "$hostsfile")
fi
echo "# $( ((hosts)) && echo "$largest emulated hosts, $rate links" || echo loopback ); TCP congestion control: $(sysctl -n net.ipv4.tcp_congestion_control); $(nproc) CPUs"

ours() {  # NAME ARGS...: one `train --world-sizes` run; its records go to $out/NAME.jsonl
  local name=$1; shift
  OMP_NUM_THREADS=1 timeout 1200 "$rocebench" train --world-sizes "$world_sizes" --iters "$iters" --warmup "$warmup" \
    "${placement[@]}" --results-dir "$out/$name.run" "$@" >"$out/$name.log" 2>&1 || {
    echo "rocebench run failed:" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
  grep '"step":"models.scaling"' "$out/$name.run/results.jsonl" >>"$out/$name.jsonl"
  rm -rf "$out/$name.run"
}

ddp() {  # WORLD: one PyTorch DDP run, rank 0's JSON line appended to $out/torch.jsonl
  local world=$1 port=$((29600 + RANDOM % 1000)) pids=() r
  for ((r = 0; r < world; r++)); do
    local env=(RANK=$r WORLD_SIZE=$world MASTER_PORT=$port OMP_NUM_THREADS=1)
    if ((hosts)); then
      local ns
      ns=$(awk -v i=$((r + 1)) 'NR == i {print $1}' "$hostsfile")
      env+=(MASTER_ADDR=$master GLOO_SOCKET_IFNAME=eth0)
      ip netns exec "$ns" env "${env[@]}" timeout 600 /usr/bin/python3 "$here/pytorch_ddp.py" --batch "$batch" \
        --iters "$iters" --warmup "$warmup" >"$out/ddp.$r" 2>&1 &
    else
      env "${env[@]}" MASTER_ADDR=127.0.0.1 timeout 600 /usr/bin/python3 "$here/pytorch_ddp.py" --batch "$batch" \
        --iters "$iters" --warmup "$warmup" >"$out/ddp.$r" 2>&1 &
    fi
    pids+=($!)
  done
  for r in "${!pids[@]}"; do wait "${pids[$r]}" || { echo "PyTorch DDP rank $r failed:" >&2; tail -5 "$out/ddp.$r" >&2; exit 1; }; done
  tail -1 "$out/ddp.0" >>"$out/torch.jsonl"
}

if [[ $part == ddp || $part == both ]]; then
  /usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "ddp: python3-torch is not installed (apt-get install python3-torch)" >&2; exit 2; }
  for ((round = 1; round <= rounds; round++)); do
    ours cpu --model resnet20_cifar --engine cpu --batch "$batch"
    for n in $rank_counts; do ddp "$n"; done
    echo "ddp round $round of $rounds done" >&2
  done
fi
if [[ $part == predict || $part == both ]]; then
  for ((round = 1; round <= rounds; round++)); do
    ours replay --model "$replay_model" --engine replay --timeline "$timeline" --batch "$replay_batch" "${buckets[@]}"
    ours replay_one_bucket --model "$replay_model" --engine replay --timeline "$timeline" --batch "$replay_batch" --bucket-mb 0
    echo "predict round $round of $rounds done" >&2
  done
fi
if [[ $part == overhead ]]; then
  for ((round = 1; round <= rounds; round++)); do
    OMP_NUM_THREADS=1 timeout 600 "$rocebench" train --model resnet20_cifar --engine cpu --batch "$batch" --iters "$iters" \
      --warmup "$warmup" --results-dir "$out/plain.run" >"$out/plain.log" 2>&1 || { echo "train failed:" >&2; tail -5 "$out/plain.log" >&2; exit 1; }
    grep '"step":"models.train"' "$out/plain.run/results.jsonl" >>"$out/plain.jsonl" && rm -rf "$out/plain.run"
    ours ws1 --model resnet20_cifar --engine cpu --batch "$batch"
    echo "overhead round $round of $rounds done" >&2
  done
fi

/usr/bin/python3 - "$out" "$rounds" <<'PY'
import json, os, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def load(name):
    path = os.path.join(out, name + ".jsonl")
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []
def spread(xs):
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}..{max(xs):.3f}]" if xs else "-"
def by_round(records, per_round):
    """Records in file order, cut into rounds of `per_round`."""
    return [records[i:i + per_round] for i in range(0, len(records), per_round)]

ours, theirs = load("cpu"), load("torch")
if ours:
    sizes = sorted({r["world"] for r in ours})
    print(f"\nrocebench cpu engine vs PyTorch DDP (gloo), resnet20_cifar, images/s, {rounds} rounds: median [min..max]")
    print(f"{'ranks':>5}  {'rocebench':>24}  {'PyTorch DDP':>24}  {'rocebench / DDP (per round)':>30}")
    for n in sizes:
        a = [r["metrics"]["images_per_s"] for r in ours if r["world"] == n and r["status"] == "ok"]
        b = [t["images_per_s"] for t in theirs if t["world"] == n]
        ratios = [x / y for x, y in zip(a, b)]
        print(f"{n:>5}  {spread(a):>24}  {spread(b):>24}  {spread(ratios):>30}")

for name, title in (("replay", "buckets"), ("replay_one_bucket", "one bucket after backward")):
    records = load(name)
    if not records:
        continue
    print(f"\nreplay of a measured timeline, {title}: step ms measured vs predicted, {rounds} rounds")
    print(f"{'ranks':>5}  {'measured ms':>24}  {'predicted ms':>24}  {'error %':>24}  {'exposed comm ms':>24}  {'speedup':>24}")
    for n in sorted({r["world"] for r in records}):
        rs = [r["metrics"] for r in records if r["world"] == n and r["status"] == "ok"]
        meas = [m["step_time_ms_p50"] for m in rs]
        pred = [m["predicted_step_ms"] for m in rs if "predicted_step_ms" in m]
        err = [m["prediction_error_pct"] for m in rs if "prediction_error_pct" in m]
        exp = [m.get("exposed_comm_ms", 0.0) for m in rs]
        sp = [m.get("speedup", 1.0) for m in rs]
        print(f"{n:>5}  {spread(meas):>24}  {spread(pred):>24}  {spread(err):>24}  {spread(exp):>24}  {spread(sp):>24}")
plain, ws1 = load("plain"), [r for r in load("ws1") if r["world"] == 1]
if plain and ws1:
    a = [r["metrics"]["images_per_s"] for r in plain]
    b = [r["metrics"]["images_per_s"] for r in ws1]
    print(f"\nthe trainer at world size 1 against plain train, resnet20_cifar cpu, batch per rank as given, {rounds} rounds")
    print(f"  plain train images/s      {spread(a)}")
    print(f"  train --world-sizes 1     {spread(b)}")
    print(f"  ratio (per round)         {spread([y / x for x, y in zip(a, b)])}")
bucketed, one = load("replay"), load("replay_one_bucket")
if bucketed and one:
    print("\nshare of the one-bucket run's exposed communication that buckets hide (same round)")
    for n in sorted({r["world"] for r in one if r["world"] > 1}):
        a = [r["metrics"]["exposed_comm_ms"] for r in bucketed if r["world"] == n and "exposed_comm_ms" in r["metrics"]]
        b = [r["metrics"]["exposed_comm_ms"] for r in one if r["world"] == n and "exposed_comm_ms" in r["metrics"]]
        hidden = [1 - x / y for x, y in zip(a, b) if y > 0]
        print(f"{n:>5} ranks: {spread(hidden)}")
PY
