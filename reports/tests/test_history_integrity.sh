#!/usr/bin/env bash
# What a real night produces must never turn a red check green (issue 45), on real SQLite files:
#  1. a history whose check is red, then a newest night that died before its first measurement: red,
#     NOT MEASURED, and so is a night that measured one size of three (the others listed, with why);
#  2. a results file with a bad line adds nothing and names file:line; the repaired file then adds,
#     and --replace replaces a run that is already there;
#  3. a damaged page (SQLite's quick_check fails) is refused by every command, the file unchanged;
#  4. exports never replace a good file with nothing: an unknown --machine lists the classes, a folder
#     or a missing folder is named with the system's reason before any work, no temp file is left behind;
#  5. flags given empty, and reruns timed before or long after the night they join, are refused.
#   usage: test_history_integrity.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"

"$rb" allreduce --ranks 2 -b 1K -e 4K -n 5 --results-dir "$work/real" >/dev/null
# Nights n01..n12 from the real run (the last three 15% slower), and variants of night 13.
/usr/bin/python3 - "$work/real/results.jsonl" "$work" <<'EOF'
import json, random, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
work = sys.argv[2]
random.seed(1)
def night(run, day, slower, keep=lambda r: True, extra=()):
    with open(f"{work}/{run}.jsonl", "w") as out:
        for r in [r for r in lines if keep(r)] + list(extra):
            r = json.loads(json.dumps(r))
            r["run"], r["time"] = run, f"2026-01-{day:02}T02:00:00Z"
            if r["kind"] == "result" and r.get("status") == "ok":
                f = slower * random.gauss(1, 0.005)
                r["metrics"] = {k: v / f if "GBps" in k else v * f for k, v in r["metrics"].items()}
                r.pop("cpu_pressure_pct", None)  # how busy this machine was while the real run ran is no night's
                # Each night's own spread is 0.5%, not the machine's load while the real run ran.
                s = r.get("samples", {})
                if "median" in s:
                    m = s["median"] = s["median"] * f
                    if "values" in s:
                        s["values"] = [m * random.gauss(1, 0.005) for _ in s["values"]]
                    if "median_ci95" in s:
                        s["median_ci95"] = [m * 0.998, m * 1.002]
            out.write(json.dumps(r) + "\n")
for n in range(1, 13):
    night(f"n{n:02}", n, 1.15 if n >= 10 else 1.0)
night("crashed", 13, 1.0, keep=lambda r: r["kind"] == "run")
one_size = lambda r: r["kind"] != "result" or r["params"].get("bytes") == 1024
skipped = [dict(r, status="skip", reason="no RDMA device", metrics={}, samples={"n": 0}) for r in lines
           if r["kind"] == "result" and r["params"].get("bytes") == 2048][:1]
night("partial", 13, 1.15, keep=one_size, extra=skipped)
EOF
db=$work/h.sqlite
expect_rc 0 "$rb" history add --db "$db" "$work"/n??.jsonl
expect_rc 1 "$rb" history check --db "$db"
expect_out "REGRESSED .*collectives.allreduce"
cp "$db" "$work/red.sqlite"

# 1. A night that died before its first measurement: still red, and says why.
expect_rc 0 "$rb" history add --db "$db" "$work/crashed.jsonl"
expect_out "added 1 run\(s\), 0 points"
expect_rc 1 "$rb" history check --db "$db" --junit "$work/junit.xml"
expect_out "NOT MEASURED the newest night \(run crashed\) measured nothing"
expect_out "^FAIL: the newest night of 1 machine class"
grep -q 'NOT MEASURED' "$work/junit.xml" || fail "the JUnit file does not say what was not measured"
expect_rc 1 "$rb" history export --db "$db" -o "$work/none.prom"
expect_out "nothing to export: the newest run \(crashed\) measured nothing"
[[ ! -e $work/none.prom ]] || fail "an export of nothing wrote a file"

# A night that measured one size of three: the other two listed, the skipped one with its reason.
cp "$work/red.sqlite" "$db"
expect_rc 0 "$rb" history add --db "$db" "$work/partial.jsonl"
expect_rc 1 "$rb" history check --db "$db"
expect_out "NOT MEASURED [0-9]+ series that the night before \(run n12\) measured, in the newest night \(run partial\)"
expect_out "collectives.allreduce \[.*\] .*bytes=2048"
expect_out "skip: no RDMA device"
expect_out "collectives.allreduce \[.*\] .*bytes=4096"
expect_out "no record of it in run partial"

# 2. A bad line: nothing added, file:line named; the repaired file adds; --replace replaces.
cp "$work/red.sqlite" "$db"
sed '3s/.*/{"kind": "result", "broken/' "$work/partial.jsonl" >"$work/bad.jsonl"
expect_rc 2 "$rb" history add --db "$db" "$work/bad.jsonl"
expect_out "bad.jsonl:3: .*nothing was added"
[[ $(sqlite3 "$db" "SELECT count(*) FROM runs WHERE run = 'partial'") == 0 ]] || fail "a file with a bad line added its run"
expect_rc 0 "$rb" history add --db "$db" "$work/partial.jsonl"
expect_out "added 1 run"
expect_rc 0 "$rb" history add --db "$db" "$work/partial.jsonl"
expect_out "partial: already in the history, left as it is \(--replace partial replaces it\)"
sed 's/"run": *"n12"/"run": "partial"/g' "$work/n12.jsonl" >"$work/partial-fixed.jsonl"
expect_rc 0 "$rb" history add --db "$db" --replace partial "$work/partial-fixed.jsonl"
expect_out "partial: replaced"
[[ $(sqlite3 "$db" "SELECT count(*) FROM points JOIN runs ON runs.id = points.run_id WHERE run = 'partial'") \
   == $(sqlite3 "$db" "SELECT count(*) FROM points JOIN runs ON runs.id = points.run_id WHERE run = 'n12'") ]] ||
  fail "--replace did not replace the run's points"
expect_rc 2 "$rb" history add --db "$db" --replace nosuch "$work/partial-fixed.jsonl"
expect_out "--replace nosuch: give one results file of that run"

# 3. A damaged page in the hosts table: every command refuses it, naming the way back; the file is unchanged.
cp "$work/red.sqlite" "$work/damaged.sqlite"
page=$(sqlite3 "$work/damaged.sqlite" "PRAGMA page_size")
root=$(sqlite3 "$work/damaged.sqlite" "SELECT rootpage FROM sqlite_master WHERE name = 'hosts'")
printf '\x0d\xff\xff\xff\xff\xff\xff\xff' | dd of="$work/damaged.sqlite" bs=1 seek=$(((root - 1) * page)) conv=notrunc status=none
cp "$work/damaged.sqlite" "$work/damaged.copy"
for cmd in "add --db $work/damaged.sqlite $work/crashed.jsonl" "check --db $work/damaged.sqlite" \
           "export --db $work/damaged.sqlite" "trends --db $work/damaged.sqlite -o $work/trends"; do
  # shellcheck disable=SC2086
  expect_rc 2 "$rb" history $cmd
  expect_out "damaged.sqlite: the history database is damaged \(SQLite quick_check: .*\); nothing was read or written"
  expect_out "sqlite3 .*damaged.sqlite .recover"
done
cmp "$work/damaged.sqlite" "$work/damaged.copy" || fail "the damaged file was changed"

# 4. Exports that cannot destroy.
cp "$work/red.sqlite" "$db"
expect_rc 0 "$rb" history export --db "$db" -o "$work/om.prom"
cp "$work/om.prom" "$work/om.copy"
expect_rc 2 "$rb" history export --db "$db" --machine nosuch -o "$work/om.prom"
expect_out "--machine nosuch: no such machine class in .*; it holds these:"
cmp "$work/om.prom" "$work/om.copy" || fail "an export for an unknown machine changed the file"
expect_rc 2 "$rb" history check --db "$db" --machine nosuch
expect_out "--machine nosuch: no such machine class"
mkdir "$work/folder"
expect_rc 2 "$rb" history export --db "$db" -o "$work/folder"
expect_out "folder: cannot write: it is a folder"
expect_rc 2 "$rb" history export --db "$db" -o /nonexistent/dir/x.prom
expect_out "/nonexistent/dir/x.prom: cannot write: its folder /nonexistent/dir does not exist"
chmod 555 "$work/folder"
if ! touch "$work/folder/probe" 2>/dev/null; then  # root writes anywhere: only a user sees the refusal
  expect_rc 2 "$rb" history export --db "$db" -o "$work/folder/x.prom"
  expect_out "folder/x.prom: cannot write: its folder .*: Permission denied"
fi
rm -f "$work/folder/probe"
chmod 755 "$work/folder"
# An output path that cannot be written is named before anything is judged: a regression's exit 1
# is never turned into a failure to write its JUnit file.
expect_rc 2 "$rb" history check --db "$db" --junit /nonexistent/dir/junit.xml
expect_out "--junit /nonexistent/dir/junit.xml: cannot write: its folder /nonexistent/dir does not exist"
expect_rc 2 "$rb" compare --junit "$work/folder" "$work/n01.jsonl" "$work/n12.jsonl"
expect_out "--junit .*folder: cannot write: it is a folder"
leftover=$(find "$work" -name '*.tmp.*')
[[ -z $leftover ]] || fail "temp files left behind: $leftover"

# 5. Empty flags, and reruns out of their time.
expect_rc 2 "$rb" history check --db "$db" --since ''
expect_out "--since is empty: give RUN or leave the flag out"
expect_rc 2 "$rb" history add --db "$db" --rerun-of '' "$work/crashed.jsonl"
expect_out "--rerun-of is empty"
sed 's/"run": *"n12"/"run": "late"/g; s/2026-01-12T/2026-01-20T/g' "$work/n12.jsonl" >"$work/late.jsonl"
expect_rc 2 "$rb" history add --db "$db" --rerun-of n12 "$work/late.jsonl"
expect_out "--rerun-of n12: run late was made 192.0 h after night n12 .*within 72 h"
sed 's/"run": *"n12"/"run": "early"/g; s/2026-01-12T/2026-01-11T/g' "$work/n12.jsonl" >"$work/early.jsonl"
expect_rc 2 "$rb" history add --db "$db" --rerun-of n12 "$work/early.jsonl"
expect_out "--rerun-of n12: run early was made 24.0 h before night n12"
[[ $(sqlite3 "$db" "SELECT count(*) FROM runs WHERE run IN ('late', 'early')") == 0 ]] || fail "a refused rerun was added"
echo "history integrity: ok"
