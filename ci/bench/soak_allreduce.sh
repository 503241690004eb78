#!/usr/bin/env bash
# Soak: checked allreduces across 4 emulated hosts (1 Gbit/s links), random algorithm, dtype, op and
# sizes, in one run of a generated plan; every element of every operation is checked. Prints how many
# operations were checked and how many elements were wrong (must be 0); exit 1 otherwise. A long
# benchmark, not a CI test (~10 minutes on 2 vCPUs for the default 10,000).
#   usage: soak_allreduce.sh ROCEBENCH [OPERATIONS=10000] [SEED=1]
set -euo pipefail
rocebench=$(realpath "$1") operations=${2:-10000} seed=${3:-1}
bed=$(cd "$(dirname "$0")/../testbeds/netns" && pwd)/netns.sh
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbsoak

hosts=$("$bed" up 4 --prefix "$prefix" --subnet 10.79.9 --rate 1gbit)
# Each step sweeps 10 sizes in and out of place: 20 checked operations.
/usr/bin/python3 - "$operations" "$seed" >"$work/plan.json" <<'PY'
import json, random, sys
operations, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
steps = []
for _ in range((operations + 19) // 20):
    dtype = rng.choice(["float32", "float16", "bfloat16"])
    smallest = rng.randrange(1, 4096) * 4  # odd element counts too: every chunking edge
    steps.append({"step": "collectives.allreduce", "params": {
        "algorithm": rng.choice(["ring", "ps", "rd"]), "dtype": dtype, "op": rng.choice(["sum", "avg", "max"]),
        "min_bytes": smallest, "max_bytes": smallest * 2 ** 9, "factor": 2, "warmup": 0, "iters": 1,
        "placement": "both", "check": True}})
print(json.dumps({"name": "soak-allreduce", "deadline_s": 60, "run_timeout_s": 7200, "steps": steps}))
PY
start=$(date +%s)
set +e
"$rocebench" run "$work/plan.json" --netns "$hosts" --ranks 4 --results-dir "$work/out" >"$work/run.out" 2>"$work/run.err"
rc=$?
set -e
/usr/bin/python3 - "$work/out/results.jsonl" "$rc" "$(($(date +%s) - start))" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
ops = [r for r in records if r.get("step") == "collectives.allreduce" and r.get("rank") == 0 and "wrong" in r.get("metrics", {})]
wrong = sum(r["metrics"]["wrong"] for r in ops)
bad = [r for r in records if r.get("status") in ("fail", "error")]
print(f"soak: {len(ops)} checked allreduces on 4 emulated hosts in {sys.argv[3]} s, run exit {sys.argv[2]}: "
      f"{wrong:g} wrong elements, {len(bad)} failed or error records")
for r in bad[:5]:
    print("  ", r.get("reason", r.get("message", "")))
sys.exit(0 if wrong == 0 and not bad and sys.argv[2] == "0" else 1)
PY
