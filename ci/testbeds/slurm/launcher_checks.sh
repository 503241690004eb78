# Sourced by test_slurm.sh and test_mpirun.sh: what `rocebench run` must do under a real launcher
# across 4 emulated hosts. The caller sets $rocebench (its real path), $prefix (hosts ${prefix}0..3),
# $work, and a function `launch_command COMMAND ARG...` that execs `rocebench COMMAND ARG...` with the
# launcher under test (exec: `launch_command … &` then leaves $! the launcher's own pid, for the signals
# below); `launch ARG...` is `launch_command run ARG...`. It may define `launcher_jobs`, printing the
# jobs its scheduler still holds.
failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

# rocebench processes: all of them, or those in one emulated host (a rank; never the launcher).
rocebench_pids() {
  local p
  for p in ${1:+$(ip netns pids "$1")} ${1:-/proc/[0-9]*}; do
    p=${p#/proc/}
    [ "/proc/$p/exe" -ef "$rocebench" ] && echo "$p"  # a builtin test: no fork per process
  done
  return 0
}
none_left_within() {  # none_left_within SECONDS
  for _ in $(seq $(($1 * 10))); do [ -z "$(rocebench_pids)" ] && return 0; sleep 0.1; done
  echo "left: $(rocebench_pids | xargs -r ps -o pid=,args= -p)"
  return 1
}
# Jobs the launcher under test left in its scheduler (`launcher_jobs`, squeue under Slurm).
no_jobs_left_within() {  # no_jobs_left_within SECONDS
  for _ in $(seq $(($1 * 10))); do [ -z "$(launcher_jobs)" ] && return 0; sleep 0.1; done
  echo "left: $(launcher_jobs)"
  return 1
}
# Waits (up to 30 s) until the run record is written: every rank has joined.
wait_run_record() {
  for _ in $(seq 300); do grep -q '"kind":"run"' "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

launch() { launch_command run "$@"; }

launcher_checks() {
  local name=$1 rc start
  cat >"$work/ok.json" <<'JSON'
{"name": "launcher-smoke", "steps": [
  {"step": "harness.rendezvous", "params": {"rounds": 20}},
  {"step": "collectives.allreduce", "params": {"algorithm": "ring", "min_bytes": 1024, "max_bytes": 65536, "factor": 8, "iters": 3}}]}
JSON
  launch "$work/ok.json" --results-dir "$work/ok" --deadline 20 --timeout 90 >"$work/ok.out" 2>"$work/ok.err" &
  wait $!
  rc=$?
  check "a 4-host run under $name succeeds (exit $rc)" test "$rc" = 0 || tail -n 20 "$work/ok.err"
  check "the run record names 4 distinct hosts, the emulated ones" /usr/bin/python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
names = sorted(h["hostname"] for h in records[0]["hosts"])
ranks = sorted((r["rank"], r["host"]) for r in records if r.get("step") == "harness.rendezvous" and r.get("status") == "ok")
print("hosts:", names, "ranks:", ranks)
want = [sys.argv[2] + str(i) for i in range(4)]
sys.exit(0 if names == want and ranks == list(enumerate(want)) else 1)' "$work/ok/results.jsonl" "$prefix"
  check "the allreduce ran over the 4 ranks with no wrong element" /usr/bin/python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in records if r.get("step") == "collectives.allreduce"]
sys.exit(0 if len(rows) == 6 and all(r["status"] == "ok" and r["world"] == 4 and r["metrics"]["wrong"] == 0 for r in rows) else 1)' "$work/ok/results.jsonl"

  cat >"$work/long.json" <<'JSON'
{"name": "launcher-long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 3000, "interval_ms": 10}}]}
JSON
  # A rank killed: the others report it by rank and host, and the run exits 3.
  launch "$work/long.json" --results-dir "$work/kill" --deadline 15 --timeout 90 >"$work/kill.out" 2>"$work/kill.err" &
  local launcher=$!
  check "every rank joined (kill run)" wait_run_record "$work/kill/results.jsonl"
  local victim
  victim=$(rocebench_pids "${prefix}2")
  check "rank 2's process is found in host ${prefix}2" test -n "$victim"
  start=$SECONDS
  kill -9 $victim
  wait "$launcher"
  rc=$?
  check "the run exits 3 (infrastructure failure), got $rc, after $((SECONDS - start)) s" test "$rc" = 3
  check "the loss names rank 2 and its host" grep -q "rank 2 on host ${prefix}2 was lost" "$work/kill.err"
  check "results hold rank 2's rank.lost event" grep -q "\"event\":\"rank.lost\".*\"rank 2 on host ${prefix}2 was lost" "$work/kill/results.jsonl"
  check "no other loss is recorded (the launcher's exit is the echo of rank 2's)" \
    test "$(grep -c '"event":"rank.lost"' "$work/kill/results.jsonl")" = 1
  check "no rocebench process is left after the kill run" none_left_within 15

  # Rank 0, which records the others' losses, killed: the launcher records it from what mpirun/srun say.
  launch "$work/long.json" --results-dir "$work/kill0" --deadline 15 --timeout 90 >"$work/kill0.out" 2>"$work/kill0.err" &
  launcher=$!
  check "every rank joined (rank 0 kill run)" wait_run_record "$work/kill0/results.jsonl"
  victim=$(rocebench_pids "${prefix}0")
  kill -9 $victim
  wait "$launcher"
  rc=$?
  check "with rank 0 killed the run exits 3, got $rc" test "$rc" = 3
  check "results name rank 0 and its host, killed by SIGKILL, and no other loss" /usr/bin/python3 -c '
import json, sys
lost = [r for r in map(json.loads, open(sys.argv[1])) if r.get("event") == "rank.lost"]
print([r["message"] for r in lost])
sys.exit(0 if [(r["details"]["rank"], r["details"]["host"], r["details"].get("ended")) for r in lost] == [(0, sys.argv[2], "killed by SIGKILL")] else 1)' \
    "$work/kill0/results.jsonl" "${prefix}0"
  check "no rocebench process is left after the rank 0 kill run" none_left_within 15

  # SIGTERM (a CI timeout) and SIGINT (Ctrl-C) to the launcher: every rank and every job is gone within
  # the deadline, the results keep what finished and say the run was interrupted, the exit is 128+signal.
  # SIGTERM stops a plan run during its second step; SIGINT stops a module command, whose temporary plan
  # (the one its ranks read) must be removed.
  cat >"$work/two.json" <<'JSON'
{"name": "launcher-two-steps", "steps": [
  {"step": "collectives.allreduce", "params": {"algorithm": "ring", "min_bytes": 1024, "max_bytes": 1024, "iters": 3}},
  {"step": "harness.rendezvous", "params": {"rounds": 3000, "interval_ms": 10}}]}
JSON
  local sig plan_file
  for sig in TERM INT; do
    if [ "$sig" = TERM ]; then
      launch "$work/two.json" --results-dir "$work/$sig" --deadline 15 --timeout 90 >"$work/$sig.out" 2>"$work/$sig.err" &
    else
      launch_command allreduce -b 1M -e 1M -n 1000000 --results-dir "$work/$sig" --deadline 15 >"$work/$sig.out" 2>"$work/$sig.err" &
    fi
    launcher=$!
    check "every rank joined (SIG$sig run)" wait_run_record "$work/$sig/results.jsonl"
    # The plan the ranks read, from rank 0's argv (--plan FILE).
    plan_file=$(tr '\0' '\n' <"/proc/$(rocebench_pids "${prefix}0" | head -n 1)/cmdline" | sed -n '/^--plan$/{n;p;q}')
    if [ "$sig" = TERM ]; then  # stopped in the second step, once the first has recorded
      for _ in $(seq 300); do grep -q '"step":"collectives.allreduce"' "$work/$sig/results.jsonl" && break; sleep 0.1; done
      sleep 1
    else
      check "the module command's ranks read a temporary plan ($plan_file)" test -f "$plan_file"
    fi
    start=$SECONDS
    kill "-$sig" "$launcher"
    wait "$launcher"
    rc=$?
    check "the launcher exits $((128 + $(kill -l "$sig"))) on SIG$sig, got $rc, after $((SECONDS - start)) s" \
      test "$rc" = $((128 + $(kill -l "$sig")))
    check "no rocebench process is left within 15 s of SIG$sig" none_left_within 15
    if declare -F launcher_jobs >/dev/null; then check "no $name job is left within 15 s of SIG$sig" no_jobs_left_within 15; fi
    check "results say SIG$sig interrupted the run, name the steps that had recorded, and no rank needed SIGKILL" /usr/bin/python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
stops = [r for r in records if r.get("event") == "run.interrupted"]
print([(r["message"], r["details"]["ranks"]) for r in stops])
want = ["collectives.allreduce"] if sys.argv[2] == "SIGTERM" else []
kept = sum(r.get("step") == "collectives.allreduce" for r in records)
# The signal itself stopped them: the launcher did not need its SIGKILL 5 s later.
sys.exit(0 if len(stops) == 1 and stops[0]["details"]["signal"] == sys.argv[2] and
         all(r["ended"] != "killed by SIGKILL" for r in stops[0]["details"]["ranks"]) and
         stops[0]["details"]["steps_with_results"] == want and kept >= len(want) else 1)' "$work/$sig/results.jsonl" "SIG$sig"
    if [ "$sig" = INT ]; then
      check "the temporary plan is removed" test -n "$plan_file" -a ! -e "$plan_file"
    fi
  done

  # The launcher killed outright: mpirun/srun get SIGTERM from the kernel (PR_SET_DEATHSIG) and must
  # still stop every rank.
  launch "$work/long.json" --results-dir "$work/orphans" --deadline 15 --timeout 90 >"$work/orphans.out" 2>"$work/orphans.err" &
  launcher=$!
  check "every rank joined (launcher SIGKILL run)" wait_run_record "$work/orphans/results.jsonl"
  kill -9 "$launcher"
  wait "$launcher"
  check "no rocebench process is left within 15 s of SIGKILL to the launcher" none_left_within 15
}

# The acceptance (#23) under a launcher: every stage's ranks started by it, a verdict for each node.
# Which verdict is this machine's business (4 ranks on its few shared CPUs can make a node look SLOW),
# so only UNREACHABLE, which would mean the launcher failed to start a node's rank, counts against it.
accept_checks() {  # accept_checks LAUNCHER RANK_ENV_SOURCE LOGIN_HOST NODES_FILE
  local name=$1 source=$2 login=$3 nodes=$4 rc
  "$here/host_exec.sh" "$login" "$rocebench" accept --launcher "$name" --hostfile "$nodes" \
    --results-dir "$work/accept" --deadline 30 >"$work/accept.out" 2>"$work/accept.err" &
  wait $!
  rc=$?
  check "rocebench accept --launcher $name gives a verdict (exit 0 or 1), got $rc" test "$rc" -le 1 || tail -n 5 "$work/accept.err"
  check "every node has a verdict and none is UNREACHABLE; every stage ran under $name" /usr/bin/python3 -c '
import glob, json, sys
verdict = json.load(open(sys.argv[1] + "/accept.json"))
nodes = sorted(n["host"] for n in verdict["nodes"])
codes = [f["code"] for n in verdict["nodes"] for f in n["findings"]]
launchers = {json.loads(open(f).readline()).get("launcher") for f in glob.glob(sys.argv[1] + "/stages/*/results.jsonl")}
print("cluster:", verdict["cluster"], "findings:", codes, "stage launchers:", launchers)
sys.exit(0 if nodes == sorted(open(sys.argv[2]).read().split()) and "UNREACHABLE" not in codes and launchers == {sys.argv[3]} else 1)' \
    "$work/accept" "$nodes" "$source"
}
