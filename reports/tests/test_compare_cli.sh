#!/usr/bin/env bash
# `rocebench compare` as a user runs it. Runs of two plans: compare says so and judges only what
# both ran. Effects print as finite percentages, or "new" / "gone", in the console, the JUnit file
# and a report's Markdown. Imports carry no spread: a 2x slowdown between two of them is UNKNOWN
# naming what would decide, and each of those (repeats of the tool, a history) does decide it.
#   usage: test_compare_cli.sh ROCEBENCH DATA_DIR
set -euo pipefail
rb=$1
data=$2
source "$(dirname "$0")/../../ci/cli_test_lib.sh"

# Runs derived from one real run: its run record (plan renamed), its series at the sizes asked for,
# each with 10 samples 0.1% apart around a time we choose, so that the verdicts do not follow the
# machine's load.
"$rb" allreduce --ranks 2 -b 1K -e 4K -n 5 --results-dir "$work/real" >/dev/null
python3 - "$work/real/results.jsonl" "$work" <<'EOF'
import hashlib, json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
def derive(name, plan, times):  # times: bytes -> time_us
    with open(f"{sys.argv[2]}/{name}.jsonl", "w") as out:
        for r in lines:
            r = json.loads(json.dumps(r))
            r["run"] = name
            if r["kind"] == "run":
                r["plan"] = {"name": plan, "sha256": hashlib.sha256(plan.encode()).hexdigest(), "file": plan + ".json"}
                for h in r["hosts"]:
                    h["cpu"]["cores"] = 64  # a CPU per rank: the verdicts are not UNKNOWN for that
            if r["kind"] == "result":
                t = times.get(r["params"]["bytes"])
                if t is None:
                    continue
                r["cpu_pressure_pct"] = 0.0
                values = [t * (1 + 0.001 * (i - 5)) for i in range(10)]
                r["metrics"] = {"time_us": t, "algbw_GBps": r["params"]["bytes"] / t / 1e3 if t else 0.0, "wrong": 0.0}
                r["samples"] = {"n": 10, "metric": "time_us", "median": t, "values": values}
            out.write(json.dumps(r) + "\n")
derive("a", "nightly-a", {1024: 100, 2048: 200})
derive("b", "nightly-b", {2048: 200, 4096: 400})
derive("b-slow", "nightly-b", {2048: 400, 4096: 400})
derive("a-lost", "nightly-a", {2048: 200})
derive("tiny", "p", {1024: 1e-5, 2048: 1e-300, 4096: 0})
derive("huge", "p", {1024: 1e300, 2048: -1e10, 4096: 50})
EOF

# Two plans: it says so, names both, and the series one plan alone ran are listed, not failed.
expect_rc 0 "$rb" compare "$work/a.jsonl" "$work/b.jsonl"
expect_out "^plans differ: BASE ran plan 'nightly-a' \(sha256 [0-9a-f]{12}\), NEW ran plan 'nightly-b' \(sha256 [0-9a-f]{12}\)"
expect_out "^gone .* gone .*time_us .*bytes=1024"
expect_out "^new .* new .*time_us .*bytes=4096"
expect_out "0 REGRESSED.*, 6 new, 6 gone \(BASE's plan only: not judged\)"
# What both ran is still judged.
expect_rc 1 "$rb" compare "$work/a.jsonl" "$work/b-slow.jsonl"
expect_out "^REGRESSED .*time_us .*bytes=2048"
# One plan: a series the new run lost still fails.
expect_rc 1 "$rb" compare "$work/a.jsonl" "$work/a-lost.jsonl"
expect_out "^missing .*time_us .*bytes=1024"
if grep -q "plans differ" "$work/out"; then fail "one plan called two"; fi

# Effects from 0, across 600 orders of magnitude, or to a negative: finite, short, or new.
no_wild_numbers() {  # FILE: no infinity and no 20-digit run of digits
  if grep -qiE 'inf|[0-9]{20}' "$1"; then fail "a wild effect in $1: $(grep -iE 'inf|[0-9]{20}' "$1" | head -1)"; fi
}
expect_rc 1 "$rb" compare --junit "$work/junit.xml" "$work/tiny.jsonl" "$work/huge.jsonl"
no_wild_numbers "$work/out"
no_wild_numbers "$work/junit.xml"
expect_out "^[A-Z]+ .* \+1e\+307% .*time_us .*bytes=1024"
expect_out "^[A-Z]+ .* new .*time_us .*bytes=4096"
"$rb" compare --write-baseline "$work/baseline.json" "$work/tiny.jsonl" >/dev/null
expect_rc 1 "$rb" report --no-plots --baseline "$work/baseline.json" -o "$work/report" "$work/huge.jsonl"
no_wild_numbers "$work/report/report.md"
no_wild_numbers "$work/report/junit.xml"

# Imports: nccl-tests prints one mean of its iterations per size, so two imports 2x apart show no spread.
scaled() {  # FACTOR SEED: all_reduce_perf.txt with its times scaled by FACTOR and 0.5% noise
  python3 - "$data/all_reduce_perf.txt" "$1" "$2" <<'EOF'
import random, sys
random.seed(int(sys.argv[3]))
for line in open(sys.argv[1]):
    t = line.split()
    if t and t[0].isdigit():
        for i in (5, 9):
            t[i] = f"{float(t[i]) * float(sys.argv[2]) * random.gauss(1, 0.005):.2f}"
        line = "  ".join(t) + "\n"
    sys.stdout.write(line)
EOF
}
import_to() {  # RESULTS RUN FACTOR SEED
  scaled "$3" "$4" >"$work/tool-output.txt"
  "$rb" import -o "$1" --run "$2" nccl-tests "$work/tool-output.txt" 2>/dev/null
}
import_to "$work/i-base.jsonl" i-base 1 1
import_to "$work/i-slow.jsonl" i-slow 2 2
expect_rc 0 "$rb" compare "$work/i-base.jsonl" "$work/i-slow.jsonl"
expect_out "^UNKNOWN .*nccl-tests printed one figure per point \(the summary of 20 iterations\).*import 5 or more runs of nccl-tests.*compare --db"
if grep -q '"bytes":[0-9]*\.' "$work/i-base.jsonl"; then fail "imported byte counts are not integers"; fi
# What it names decides: five runs of the tool imported into each file ...
for seed in 11 12 13 14 15; do import_to "$work/i-base5.jsonl" i-base5 1 "$seed"; done
for seed in 21 22 23 24 25; do import_to "$work/i-slow5.jsonl" i-slow5 2 "$seed"; done
expect_rc 1 "$rb" compare "$work/i-base5.jsonl" "$work/i-slow5.jsonl"
expect_out "^REGRESSED .*time_us .*bytes=134217728"
# ... or a history of imported runs of the machine class.
for night in 1 2 3 4 5 6; do import_to "$work/night$night.jsonl" "night$night" 1 "$((30 + night))"; done
"$rb" history add --db "$work/history.sqlite" --machine lab-h100 "$work"/night?.jsonl >/dev/null
expect_rc 1 "$rb" compare --db "$work/history.sqlite" --machine lab-h100 "$work/i-base.jsonl" "$work/i-slow.jsonl"
expect_out "^REGRESSED .*beyond the ±[0-9.]+% 6 runs here vary .*time_us .*bytes=134217728"
expect_rc 2 "$rb" compare --db "$work/history.sqlite" "$work/i-base.jsonl" "$work/i-slow.jsonl"
expect_out "give --machine CLASS"
echo PASS
