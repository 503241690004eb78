#!/usr/bin/env bash
# Benchmark: `rocebench accept` on N emulated hosts with one slow link (host SLOW at half the others'
# rate). Prints the node(s) named SLOW, how many allreduce runs the stage made (the full group, its
# retry, the bisection) and the wall time. Not a CI test: N = 16 takes minutes on 2 vCPUs.
#   usage: accept_bisection.sh ROCEBENCH N [SLOW=N/2+1] [RATE_MBIT=200]
set -euo pipefail
rocebench=$(realpath "$1") n=$2 slow=${3:-$((n / 2 + 1))} rate=${4:-200}
bed=$(cd "$(dirname "$0")/../testbeds/netns" && pwd)/netns.sh
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbbis

hosts=$("$bed" up "$n" --prefix "$prefix" --subnet 10.79.8 --rate "${rate}mbit" --rate-of "$slow=$((rate / 2))mbit")
start=$(date +%s)
set +e
"$rocebench" accept --netns "$hosts" --results-dir "$work/out" --deadline 60 >"$work/accept.out" 2>&1
rc=$?
set -e
took=$(($(date +%s) - start))
/usr/bin/python3 - "$work/out" "$prefix$slow" "$rc" "$took" "$n" <<'PY'
import json, math, os, sys
out, expected, rc, took, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
stages = sorted(os.listdir(f"{out}/stages"))
full = [s for s in stages if s.split("-", 1)[1].startswith("allreduce")]
bisect = [s for s in stages if s.split("-", 1)[1].startswith("bisect")]
verdict = json.load(open(f"{out}/accept.json"))
slow = [n_["host"] for n_ in verdict["nodes"] if any(f["code"] == "SLOW" for f in n_["findings"])]
failed = [n_["host"] for n_ in verdict["nodes"] if n_["verdict"] == "FAIL"]
print(f"N={n}: SLOW {slow} (expected [{expected}]); failed nodes {failed}; exit {rc}")
print(f"  allreduce runs of the whole group (first, retry, after removing the slow node): {len(full)}")
print(f"  bisection runs: {len(bisect)} (ceil(log2 N) = {math.ceil(math.log2(n))})")
print(f"  wall time: {took} s for all stages")
sys.exit(0 if slow == [expected] else 1)
PY
