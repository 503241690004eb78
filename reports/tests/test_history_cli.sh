#!/usr/bin/env bash
# `rocebench history` end to end on real SQLite files: one real allreduce run, copied into nights
# with 0.5% noise (the last three 15% slower), added, checked, exported; and the refusals: a run
# added twice, a corrupt file, a locked file, a run without its machine class.
#   usage: test_history_cli.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"

"$rb" allreduce --ranks 2 -b 1K -e 4K -n 5 --results-dir "$work/real" >/dev/null
python3 - "$work/real/results.jsonl" "$work" <<'EOF'
import json, random, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
random.seed(1)
for night in range(1, 13):
    run = f"n{night:02}"
    slower = 1.15 if night >= 10 else 1.0
    with open(f"{sys.argv[2]}/{run}.jsonl", "w") as out:
        for r in lines:
            r = json.loads(json.dumps(r))
            r["run"] = run
            r["time"] = f"2026-01-{night:02}T02:00:00Z"
            if r["kind"] == "result":
                f = slower * random.gauss(1, 0.005)
                for k, v in r["metrics"].items():
                    r["metrics"][k] = v / f if "GBps" in k else v * f
                # How busy this machine was while the real run ran is no night's: a busy record makes the
                # check ask for a rerun instead of flagging the step.
                r.pop("cpu_pressure_pct", None)
                # The real run's own spread follows the machine's load (±7000% seen under a build), which
                # would make the 15% step noise: each night carries a spread of 0.5% instead.
                s = r.get("samples", {})
                if "median" in s:
                    m = s["median"]
                    if "values" in s:
                        s["values"] = [m * random.gauss(1, 0.005) for _ in s["values"]]
                    if "median_ci95" in s:
                        s["median_ci95"] = [m * 0.998, m * 1.002]
            out.write(json.dumps(r) + "\n")
EOF
db=$work/history.sqlite
early=("$work"/n0[1-9].jsonl)

expect_rc 0 "$rb" history add --db "$db" "${early[@]}"
expect_out "added 9 run\(s\)"
sqlite3 "$db" .dump >"$work/dump1"
expect_rc 0 "$rb" history add --db "$db" "$work/n03.jsonl"
expect_out "n03: already in the history"
sqlite3 "$db" .dump | cmp - "$work/dump1" || fail "adding a run twice changed the database"

expect_rc 0 "$rb" history check --db "$db"
expect_out "0 REGRESSED"

expect_rc 0 "$rb" history add --db "$db" "$work"/n1[0-2].jsonl
expect_rc 1 "$rb" history check --db "$db" --junit "$work/junit.xml"
expect_out "REGRESSED .*collectives.allreduce time_us"
expect_out "from run n10 \(revision [^,]+, 2026-01-10\)"
grep -q "<failure" "$work/junit.xml" || fail "no failure in the JUnit file"
expect_rc 2 "$rb" history check --db "$db" --since nosuchrun
expect_out "--since nosuchrun: no such run"
expect_rc 2 "$rb" history check --db "$db" --window 0
expect_out "window"

# A rerun of night 11, made after night 12, joins night 11; one of a run the history lacks adds nothing.
sed 's/"run": "n11"/"run": "n11-rerun"/' "$work/n11.jsonl" >"$work/n11-rerun.jsonl"
expect_rc 2 "$rb" history add --db "$db" --rerun-of n99 "$work/n11-rerun.jsonl"
expect_out "--rerun-of n99: no such run in $db; nothing was added"
expect_rc 0 "$rb" history add --db "$db" --rerun-of n11 "$work/n11-rerun.jsonl"
[[ $(sqlite3 "$db" "SELECT night FROM runs WHERE run = 'n11-rerun'") == n11 ]] || fail "the rerun did not join night n11"
expect_rc 1 "$rb" history check --db "$db"
expect_out "REGRESSED .*collectives.allreduce time_us"

# compare: rows by size of change, largest first; with --db the nights' noise is known.
expect_rc 1 "$rb" compare "$work/n01.jsonl" "$work/n12.jsonl"
awk 'NR > 1 && $4 ~ /%$/ { e = $4; sub("%", "", e); e += 0; e = e < 0 ? -e : e; if (NR > 2 && e > last + 1e-9) bad = 1; last = e }
     END { exit bad }' "$work/out" || fail "compare rows are not sorted by size of change"
expect_rc 0 "$rb" compare --db "$db" "$work/n01.jsonl" "$work/n02.jsonl"

expect_rc 0 "$rb" history export --db "$db" -o "$work/rocebench.prom"
grep -qE '^rocebench_busbw_GBps\{.*step="collectives.allreduce".*run="n12".*bytes="1024".*host="[^"]+"\} [0-9.e+-]+$' \
  "$work/rocebench.prom" || { cat "$work/rocebench.prom"; fail "no busbw gauge of run n12"; }
grep -q '^# TYPE rocebench_time_us gauge$' "$work/rocebench.prom" || fail "no TYPE line"

# Trend pages: a plot per series that moved, the regressions first in the index.
expect_rc 0 "$rb" history trends --db "$db" -o "$work/trends"
ls "$work"/trends/s*.png >/dev/null || fail "no trend plot"
grep -o "<b>[A-Z]*</b>" "$work/trends/index.html" | head -1 | grep -q REGRESSED || fail "index.html does not start with a regression"
"$rb" run builtin:nightly --dry-run >/dev/null || fail "the built-in nightly plan does not load"

# A corrupt file: refused with exit 2, left as it was.
head -c 4096 /dev/urandom >"$work/bad.sqlite"
cp "$work/bad.sqlite" "$work/bad.copy"
expect_rc 2 "$rb" history add --db "$work/bad.sqlite" "$work/n01.jsonl"
expect_out "bad.sqlite: not a usable history database"
cmp "$work/bad.sqlite" "$work/bad.copy" || fail "the corrupt file was changed"

# Another writer holds the lock: exit 3 after the busy timeout, nothing added.
mkfifo "$work/locker.in"
sqlite3 "$db" <"$work/locker.in" &
locker=$!
exec 3>"$work/locker.in"
echo "BEGIN EXCLUSIVE;" >&3
for _ in $(seq 100); do  # until the lock is held
  sqlite3 -cmd ".timeout 1" "$db" "SELECT 1" >/dev/null 2>&1 || break
  sleep 0.1
done
expect_rc 3 "$rb" history add --db "$db" --busy-timeout 0.5 "$work/n11.jsonl"
expect_out "locked by another process"
echo "ROLLBACK;" >&3
exec 3>&-
wait "$locker"
sqlite3 "$db" "SELECT count(*) FROM runs" | grep -qx 13 || fail "runs changed under the lock"

# No machine class: refused naming the field.
sed -E 's/"model": *"[^"]*"/"model": ""/; s/"run": *"n01"/"run": "x01"/g' "$work/n01.jsonl" >"$work/x01.jsonl"
expect_rc 2 "$rb" history add --db "$db" "$work/x01.jsonl"
expect_out "field 'hosts\[0\].cpu.model': missing"
expect_rc 2 "$rb" history frobnicate
echo "history end to end: ok"
