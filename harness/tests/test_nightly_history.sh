#!/usr/bin/env bash
# A plan that names a history (as builtin:nightly does) runs the check itself, on real SQLite files:
#  1. the first run adds itself and cannot be judged yet (UNKNOWN, exit 0); its run record says which
#     CPU each rank was pinned to, and the ranks' threads really are on that CPU alone;
#  2. a history of earlier nights like it: a run is not flagged (exit 0);
#  3. a history whose nights were 4x faster until two nights ago: the run is the third night of the
#     step and is flagged REGRESSED (exit 1), in the summary and in history-junit.xml; its reruns
#     decide when the run landed in this machine's other regime (both vCPUs busy halves barrier p50);
#  4. fewer CPUs than ranks (taskset -c 0): recorded as shared, not refused;
#  5. a corrupt database: exit 2, the file left as it was;
#  6. a rerun (--rerun-of): joins the night it repeats, so the check judges it with that night's runs
#     (REGRESSED, or an outlier when it landed in the other regime); one of a run the history lacks is
#     refused before any rank starts;
#  7. --reruns N: a night whose step is UNKNOWN reruns the step itself (only the steps behind UNKNOWN
#     series, each rerun joining the night) until the check decides or N is spent, and exits with the
#     decision; --steps runs only a plan's steps of a kind, and refuses a kind the plan lacks.
# The earlier nights are imported copies of the first run's records (other run ids and dates), so the
# machine class is this machine's.
#   usage: test_nightly_history.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"

cat >"$work/plan.json" <<'EOF'
{"name": "nightly-test", "launcher": {"type": "local", "ranks": 2, "pin_cpus": true}, "history": "history.sqlite",
 "steps": [{"step": "harness.rendezvous", "params": {"rounds": 300, "interval_ms": 10}}]}
EOF

# 1. The first run: its plan's history (beside the runs' folders) is created, and holds one run.
"$rb" run "$work/plan.json" --results "$work/res" --run-id first >"$work/out" 2>"$work/err" &
run_pid=$!
# While it runs (100 rounds 10 ms apart): every thread of each rank allowed one CPU, the same one.
for _ in $(seq 100); do
  mapfile -t pids < <(sed -n 's/.*rank [0-9]* started, pid \([0-9]*\).*/\1/p' "$work/err")
  [[ ${#pids[@]} == 2 ]] && grep -q "plan 'nightly-test'" "$work/err" && break
  sleep 0.1
done
# Each rank pins itself once it has read the plan, past the rendezvous: on a loaded machine that can take
# seconds, so wait (up to 10 s, while the ranks live) until both ranks' threads show one CPU each, then compare.
declare -A allowed
for _ in $(seq 500); do
  for rank in 0 1; do
    allowed[$rank]=$(cat /proc/"${pids[rank]}"/task/*/status 2>/dev/null | sed -n 's/^Cpus_allowed_list:\t//p' | sort -u | tr '\n' ' ')
  done
  [[ ${allowed[0]} =~ ^[0-9]+\ $ && ${allowed[1]} =~ ^[0-9]+\ $ ]] && break
  sleep 0.02
done
rc=0
wait $run_pid || rc=$?
cat "$work/out" "$work/err"
[[ $rc == 0 ]] || fail "the first run: exit $rc, not 0"
expect_out "history: added this run to $work/res/history.sqlite"
expect_out "UNKNOWN .*harness.rendezvous"
expect_out "runs of history; 5 are needed to judge"
expect_out "UNKNOWN: a longer history would decide [0-9]+ of them: up to 5 more night"
/usr/bin/python3 - "$work/res/first/results.jsonl" "${allowed[0]}" "${allowed[1]}" <<'EOF'
import json, os, sys
run = json.loads(open(sys.argv[1]).readline())
host = run["hosts"][0]
pins = {p["rank"]: p["cpu"] for p in host.get("pinned_cpus", [])}
assert sorted(pins) == [0, 1], f"pinned_cpus: {host.get('pinned_cpus')}"
for rank in (0, 1):
    assert sys.argv[2 + rank].strip() == str(pins[rank]), f"rank {rank}: threads allowed '{sys.argv[2 + rank]}', recorded CPU {pins[rank]}"
if len(os.sched_getaffinity(0)) >= 2:
    assert pins[0] != pins[1], f"two ranks on one CPU with {len(os.sched_getaffinity(0))} to choose from: {pins}"
    assert "pinning" not in host, host["pinning"]
EOF

# Earlier nights, imported: copies of the first run's records with 0.5% noise, metrics times SCALE, no CPU pressure.
nights() {  # PREFIX FIRST LAST SCALE
  /usr/bin/python3 - "$work/res/first/results.jsonl" "$work" "$@" <<'EOF'
import json, random, sys
src, work, prefix, first, last, scale = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
lines = [json.loads(l) for l in open(src)]
random.seed(first)
for night in range(first, last + 1):
    run = f"{prefix}{night:02}"
    with open(f"{work}/{run}.jsonl", "w") as out:
        for r in lines:
            r = json.loads(json.dumps(r))
            r["run"], r["time"] = run, f"2026-01-{night:02}T02:00:00Z"
            # Imported nights of a quiet machine: the first run's CPU pressure (CTest's other tests, -j2)
            # would mark the step's night busy, and its check asks for a quiet rerun, not a verdict.
            r.pop("cpu_pressure_pct", None)
            if r["kind"] == "result":
                f = scale * random.gauss(1, 0.005)
                r["metrics"] = {k: v * f for k, v in r["metrics"].items()}
            out.write(json.dumps(r) + "\n")
EOF
}

# 2. Nights like the first run: a run of this machine is not a regression.
nights same 1 8 1.0
expect_rc 0 "$rb" history add --db "$work/same.sqlite" "$work"/same0[1-8].jsonl "$work/res/first/results.jsonl"
expect_rc 0 "$rb" run "$work/plan.json" --results "$work/res" --run-id again --history "$work/same.sqlite"
expect_out "history: added this run to $work/same.sqlite"
expect_out "0 REGRESSED"

# 3. Nights 1-8 four times faster, 9 and 10 like this machine: the run is the step's third night.
# Nights 9 and 10 copy the first run; a run made while both vCPUs are busy has half its barrier p50
# (no vCPU halts between rounds) and reads as an outlier nearer the old level: reruns decide then.
nights step 1 8 0.25
nights step 9 10 1.0
expect_rc 0 "$rb" history add --db "$work/step.sqlite" "$work"/step*.jsonl
expect_rc 1 "$rb" run "$work/plan.json" --results "$work/res" --run-id slow --history "$work/step.sqlite" --reruns 3
expect_out "REGRESSED .*harness.rendezvous barrier_us_p50"
expect_out "from run step09 \(revision [^,]*, 2026-01-09\)"
expect_out "[1-9][0-9]* REGRESSED"
grep -q "<failure" "$work/res/slow/history-junit.xml" || fail "no failure in the run's history-junit.xml"

# 4. Fewer CPUs than ranks: both ranks on CPU 0, said in the record; the run still runs.
expect_rc 0 taskset -c 0 "$rb" run "$work/plan.json" --results "$work/res" --run-id onecpu --history "$work/one.sqlite"
/usr/bin/python3 - "$work/res/onecpu/results.jsonl" <<'EOF'
import json, sys
host = json.loads(open(sys.argv[1]).readline())["hosts"][0]
assert [p["cpu"] for p in host["pinned_cpus"]] == [0, 0], host["pinned_cpus"]
assert host.get("pinning") == "more ranks than the 1 CPU(s) this run may use: rank(s) 1 share a CPU with another rank", host.get("pinning")
EOF

# 5. A corrupt history: exit 2 naming the file, which is left as it was.
head -c 4096 /dev/urandom >"$work/bad.sqlite"
cp "$work/bad.sqlite" "$work/bad.copy"
expect_rc 2 "$rb" run "$work/plan.json" --results "$work/res" --run-id bad --history "$work/bad.sqlite"
expect_out "history: $work/bad.sqlite not updated: .*bad.sqlite"
cmp "$work/bad.sqlite" "$work/bad.copy" || fail "the corrupt history was changed"

# 6. A rerun of the step's third night joins that night; a rerun of a run the history lacks starts nothing.
expect_rc 2 "$rb" run "$work/plan.json" --results "$work/res" --run-id norun --history "$work/step.sqlite" --rerun-of nosuch
expect_out "--rerun-of nosuch: no such run in $work/step.sqlite"
[[ ! -e $work/res/norun ]] || fail "a refused rerun made its results folder"
sed 's/ "history": "history.sqlite",//' "$work/plan.json" >"$work/plain.json"
expect_rc 2 "$rb" run "$work/plain.json" --results "$work/res" --run-id norun --rerun-of slow
expect_out "--rerun-of slow: the run adds itself to no history"
rc=0
"$rb" run "$work/plan.json" --results "$work/res" --run-id slow-rerun --history "$work/step.sqlite" --rerun-of slow >"$work/out" 2>&1 || rc=$?
cat "$work/out"
[[ $(sqlite3 "$work/step.sqlite" "SELECT night FROM runs WHERE run = 'slow-rerun'") == slow ]] || fail "the rerun did not join night 'slow'"
# Judged with its night: the step still starts at night 9, and every run of night 'slow' counts.
runs=$((2 + $(sqlite3 "$work/step.sqlite" "SELECT count(*) FROM runs WHERE night = 'slow' OR run = 'slow'")))
grep -A1 -E "^ +(REGRESSED|UNKNOWN) .*harness.rendezvous barrier_us_p50" "$work/out" |
  grep -qE "(over the last $runs runs|$runs run\(s\) .*an outlier or a step\?).*from run step09" ||
  fail "barrier_us_p50 is not judged over the step's $runs runs from night 9 on, REGRESSED or an outlier"
if grep -qE "^ +REGRESSED " "$work/out"; then [[ $rc == 1 ]] || fail "REGRESSED, yet exit $rc"; else [[ $rc == 0 ]] || fail "nothing REGRESSED, yet exit $rc"; fi

# 7. Twenty-five nights 4x faster, then this machine: the first slow night is UNKNOWN (a step or an
# outlier?); with --reruns 3 the run reruns the step, in the night, until it is REGRESSED (exit 1).
# A machine so loaded that the check cannot judge (CPU busy) may leave it UNKNOWN after 3 reruns (exit 0).
nights long 1 25 0.25
expect_rc 0 "$rb" history add --db "$work/long.sqlite" "$work"/long*.jsonl
cat >"$work/two.json" <<'EOF2'
{"name": "nightly-two", "launcher": {"type": "local", "ranks": 2, "pin_cpus": true},
 "steps": [{"step": "harness.rendezvous", "params": {"rounds": 300, "interval_ms": 10}}, {"step": "netcheck.host", "params": {"rdma_required": false}}]}
EOF2
rc=0
"$rb" run "$work/two.json" --results "$work/res" --run-id night --history "$work/long.sqlite" --reruns 3 >"$work/out" 2>"$work/err" || rc=$?
cat "$work/out"
expect_out "history: rerun 1 of up to 3 of night night: [0-9]+ series UNKNOWN that a rerun would decide; rerunning harness.rendezvous$"
reruns=$(sqlite3 "$work/long.sqlite" "SELECT count(*) FROM runs WHERE night = 'night' AND run LIKE 'night-rerun%'")
[[ $reruns -ge 1 && $reruns -le 3 ]] || fail "reruns joined to night 'night': $reruns, not 1-3"
/usr/bin/python3 - "$work/res/night-rerun1" <<'EOF2'
import json, sys
steps = [s["step"] for s in json.load(open(sys.argv[1] + "/plan.json"))["steps"]]
assert steps == ["harness.rendezvous"], f"the rerun ran {steps}, not only the UNKNOWN step"
EOF2
if grep -q "REGRESSED .*harness.rendezvous" "$work/out"; then
  [[ $rc == 1 ]] || fail "REGRESSED after reruns, yet exit $rc"
  expect_out "\(decided after [1-3] rerun\(s\) of the night\)"
  expect_out "reruns: $reruns of night night made; [1-9][0-9]* series decided by them"
  grep -q "decided after [1-3] rerun" "$work/res/night/history-junit.xml" || fail "the night's history-junit.xml does not say the reruns decided"
elif grep -q "CPU busy" "$work/out"; then
  [[ $rc == 0 ]] || fail "UNKNOWN on a busy machine: exit $rc, not 0"
  expect_out "history: [0-9]+ series still UNKNOWN after $reruns rerun\(s\) of night night"
  echo "NOTE: the machine was too busy for the reruns to decide (CPU busy): their decision was not checked"
else
  fail "the reruns neither decided REGRESSED nor said the machine was too busy (exit $rc)"
fi
expect_rc 2 "$rb" run "$work/two.json" --results "$work/res" --run-id nostep --steps nosuch.step
expect_out "--steps nosuch.step: the plan 'nightly-two' has no step of that kind \(it has: harness.rendezvous, netcheck.host\)"
echo "PASS"
