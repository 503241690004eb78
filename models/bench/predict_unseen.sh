#!/usr/bin/env bash
# A world size the prediction never saw (issue #42): on 8 emulated hosts (ci/testbeds/netns, one rank
# a host, --rate links), calibrate the fabric from allreduce sweeps at 2 and 4 ranks and the compute
# from one rank only, predict 8 ranks with `rocebench predict --fabric-from`, then measure 8 ranks in
# the same script; print predicted against measured step time and the error split (compute: forward +
# backward + update; communication: all of it, and the part exposed) for ring, ring without overlap and ps.
#
#   usage: predict_unseen.sh ROCEBENCH [--engine replay|cpu] [--rate 250mbit] [--iters 10]
#
# The rate is one the bed carries on all 8 links at once: its links are shaped in software on this
# machine's CPUs, and at 1gbit 8 ranks' ring allreduce got ~0.7x the busbw of 2 ranks (softirq-bound),
# a slowdown of the machine that no fabric model should predict (models/README.md).
#
# replay: the shipped cpu-resnet20_cifar-fp32-b16 timeline is the one-rank compute (the engine sleeps
# through it, so 8 ranks on a few CPUs do not slow each other's compute); cpu: a `train --profile` at
# one rank is, and where the machine has fewer CPUs than 8 ranks the measured compute grows with the
# world size: the comparison is then of the communication part (the step's line says so). Needs root;
# the hosts (prefix rbpu, 10.79.0.0/24) are torn down on exit. Not a CTest: a benchmark.
set -euo pipefail
rb=$(realpath "$1"); shift
engine=replay rate=250mbit iters=10
while (($#)); do
  case $1 in
    --engine) engine=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "predict_unseen.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $engine == replay || $engine == cpu ]] || { echo "predict_unseen.sh: --engine replay|cpu" >&2; exit 2; }
((EUID == 0)) || { echo "predict_unseen.sh: needs root (network namespaces)"; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../../ci/testbeds/netns/netns.sh
bed=(--prefix rbpu --subnet 10.79.0)
model=resnet20_cifar batch=16 timeline=cpu-resnet20_cifar-fp32-b16
bucket=(--bucket-mb 0.25 --first-bucket-mb 0.25)  # resnet20_cifar's 1.1 MB of gradients in 5 buckets
out=$(mktemp -d /tmp/predict-unseen.XXXXXX)
trap 'bash "$netns" down "${bed[@]}" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
hosts=$(bash "$netns" up 8 --rate "$rate" "${bed[@]}")
echo "# $engine engine, $model batch $batch a rank, 8 emulated hosts at $rate; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

run() {  # NAME ARGS...: one rocebench command, its records in $out/NAME
  local name=$1; shift
  OMP_NUM_THREADS=1 timeout 900 "$rb" "$@" --results-dir "$out/$name" >"$out/$name.log" 2>&1 || {
    echo "predict_unseen.sh: rocebench $1 failed:" >&2; tail -5 "$out/$name.log" >&2; exit 1; }
}

# Calibration: what 1, 2 and 4 ranks show. The fabric from sweeps at 2 and 4 (one rank reduces nothing).
for algorithm in ring ps; do
  run "sweep-$algorithm" allreduce --algorithm "$algorithm" --netns "$hosts" --ranks 4 --world-sizes 2,4 \
    -b 16K -e 4M -f 4 -n 10 --placement in
done
if [[ $engine == cpu ]]; then  # the compute: one rank's own layers
  run profile train --model "$model" --engine cpu --batch "$batch" --iters "$iters" --profile
  timeline=$out/profile/results.jsonl
fi
train=(train --model "$model" --engine "$engine" --batch "$batch" --iters "$iters" --warmup 2)
[[ $engine == replay ]] && train+=(--timeline "$timeline")

# name  sync  bucket flags
configs=("ring ring ${bucket[*]}" "ring-no-overlap ring --bucket-mb 0" "ps ps ${bucket[*]}")
for config in "${configs[@]}"; do
  read -r name sync flags <<<"$config"
  # shellcheck disable=SC2086  # the bucket flags split as intended
  run "predict-$name" predict --model "$model" --timeline "$timeline" --fabric-from "$out/sweep-$sync" --sync "$sync" \
    --world-sizes 8 $flags
  # shellcheck disable=SC2086
  run "measure-$name" "${train[@]}" --netns "$hosts" --ranks 8 --world-sizes 8 --sync "$sync" $flags
  # The same prediction with the compute as measured: the timeline at the speed of each step's
  # slowest rank (the one the others waited for), so that what is left to compare is communication.
  slowest=$(/usr/bin/python3 -c 'import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("step") == "models.scaling" and r.get("world") == 8 and r.get("status") == "ok":
        print(r["metrics"]["slowest_compute_ms"])' "$out/measure-$name/results.jsonl")
  # shellcheck disable=SC2086
  run "at-slowest-$name" predict --model "$model" --timeline "$timeline" --fabric-from "$out/sweep-$sync" --sync "$sync" \
    --world-sizes 8 --step-ms "$slowest" $flags
done

/usr/bin/python3 - "$out" "${configs[@]}" <<'PY'
import json, sys
out, configs = sys.argv[1], [c.split()[0] for c in sys.argv[2:]]
def record(name, step):
    for line in open(f"{out}/{name}/results.jsonl"):
        r = json.loads(line)
        if r.get("step") == step and r.get("world") == 8 and r.get("status") == "ok":
            return r
    raise SystemExit(f"predict_unseen.sh: no {step} record at 8 ranks in {name}")
fit = record("predict-ring", "models.predict")["samples"]["predicted_from"]["fabric_fit"]["fits"][0]
print(f"# ring fit from 2 and 4 ranks: alpha {fit['alpha_us']:.1f} us a step, {fit['GBps']:.4f} GB/s, "
      f"relative RMS {100 * fit['rms_relative']:.1f}% over {len(fit['points'])} points")
# The communication part is judged again at the compute as measured: the exposed time of each step's
# slowest rank (no rank's compute hid it), against the exposed time predicted on the timeline played
# at that rank's speed; and how much of that rank's exposed time its threads waited for each other's
# work to be picked up (hand-offs: none predicted; with the CPUs shared, the wait for a CPU).
print(f"{'config':<16} {'predicted ms':>12} {'measured ms':>11} {'error':>7} {'compute pred/meas ms':>21} "
      f"{'comm pred/meas ms':>19} {'error':>7} {'exposed pred/meas ms':>21} {'error':>7} "
      f"{'slowest compute ms':>18} {'then exposed pred/meas ms':>26} {'error':>7} {'of it hand-offs ms':>18}")
for name in configs:
    p, m = record(f"predict-{name}", "models.predict")["metrics"], record(f"measure-{name}", "models.scaling")
    at = record(f"at-slowest-{name}", "models.predict")["metrics"]
    mm = m["metrics"]
    compute = mm["forward_ms"] + mm["backward_ms"] + mm["update_ms"]
    exposed = mm.get("exposed_comm_ms", 0.0)
    slowest = mm["slowest_compute_ms"]
    then = mm["slowest_exposed_comm_ms"]
    line = (f"{name:<16} {p['step_time_ms']:>12.1f} {mm['step_time_ms_p50']:>11.1f} "
            f"{100 * (mm['step_time_ms_p50'] / p['step_time_ms'] - 1):>+6.1f}% "
            f"{p['compute_ms']:>10.1f} / {compute:>8.1f} {p['comm_ms']:>8.1f} / {mm['comm_ms']:>8.1f} "
            f"{100 * (mm['comm_ms'] / p['comm_ms'] - 1):>+6.1f}% {p['exposed_comm_ms']:>10.1f} / {exposed:>8.1f} "
            f"{100 * (exposed / p['exposed_comm_ms'] - 1):>+6.1f}% {slowest:>18.1f} "
            f"{at['exposed_comm_ms']:>15.1f} / {then:>8.1f} {100 * (then / at['exposed_comm_ms'] - 1):>+6.1f}% "
            f"{mm['slowest_handoff_ms']:>18.1f}")
    threads, cpus = {}, {}  # per machine, as models.scaling judges ranks that share CPUs
    for r in m["samples"].get("per_rank", []):
        threads[r["machine"]] = threads.get(r["machine"], 0) + r.get("threads", 1)
        cpus[r["machine"]] = r["cpus"]
    shared = [f"{threads[k]} threads on {cpus[k]} CPUs" for k in threads if threads[k] > cpus[k]]
    if shared:
        line += f"  (not comparable: the ranks share CPUs, {', '.join(shared)}: judge the communication part)"
    print(line)
PY
