#!/usr/bin/env bash
# CTest: `rocebench run --launcher srun` on a real Slurm cluster (slurm.sh: slurmctld and munged on a
# login host, one slurmd in each of 4 emulated hosts). A run succeeds across 4 distinct hosts; a task
# killed is reported by rank and host and the run exits 3; SIGTERM to the launcher stops every rank;
# `rocebench accept --launcher srun` gives every node a verdict.
# Exit 77 (skipped, the reason on the last line) without root, network namespaces or Slurm; a
# failure under CI=true (../unavailable.sh).
set -uo pipefail
rocebench=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
bed=$here/../netns/netns.sh
slurm=$here/slurm.sh
source "$here/../netns/testlib.sh"
netns_test_setup rbs
trap '"$slurm" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$work"' EXIT
for tool in slurmctld slurmd srun munged; do
  PATH=$PATH:/usr/sbin:/sbin command -v "$tool" >/dev/null || testbed_unavailable "$tool is not installed (ci/setup.sh installs slurm-wlm and munge)"
done
source "$here/launcher_checks.sh"

env_file=$("$slurm" up 4 --prefix "$prefix" --subnet 10.78.9 2>"$work/up.err")
case $? in
  0) ;;
  3) testbed_unavailable "Slurm cannot start here: $(tail -n 1 "$work/up.err")" ;;
  *) echo "FAIL: slurm.sh up: $(cat "$work/up.err")"; exit 1 ;;
esac
source "$env_file"
echo "Slurm is up: $(tr '\n' ' ' <"$SLURM_NODES")(login host $SLURM_LOGIN)"
# The launcher runs on the login host, as an operator's would; srun finds the cluster by SLURM_CONF.
# A later --hostfile (the reversed one below) overrides this one.
launch() { exec "$here/host_exec.sh" "$SLURM_LOGIN" "$rocebench" run --launcher srun --hostfile "$SLURM_NODES" "$@"; }

launcher_checks srun

# Slurm lays tasks out in its node table's order; the hostfile's order must win (rank 0 is where
# MASTER_ADDR, the first host, points).
tac "$SLURM_NODES" >"$work/reversed"
cat >"$work/meet.json" <<'JSON'
{"name": "reversed", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 5}}]}
JSON
launch "$work/meet.json" --hostfile "$work/reversed" --results-dir "$work/rev" --deadline 20 --timeout 60 >"$work/rev.out" 2>"$work/rev.err" &
wait $!
rc=$?
check "a run from a hostfile in reverse order succeeds (exit $rc)" test "$rc" = 0 || tail -n 5 "$work/rev.err"
check "rank i ran on the hostfile's i-th host" /usr/bin/python3 -c '
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
ranks = sorted((r["rank"], r["host"]) for r in records if r.get("step") == "harness.rendezvous" and r.get("status") == "ok")
sys.exit(0 if [h for _, h in ranks] == open(sys.argv[2]).read().split() else 1)' "$work/rev/results.jsonl" "$work/reversed"
# The acceptance (#23) with srun: every stage's ranks started by Slurm, a verdict for each node. Which
# verdict is this machine's business (4 ranks on its few shared CPUs can make a node look SLOW), so
# only UNREACHABLE, which would mean srun failed to start a node's rank, counts against it.
"$here/host_exec.sh" "$SLURM_LOGIN" "$rocebench" accept --launcher srun --hostfile "$SLURM_NODES" \
  --results-dir "$work/accept" --deadline 30 >"$work/accept.out" 2>"$work/accept.err" &
wait $!
rc=$?
check "rocebench accept --launcher srun gives a verdict (exit 0 or 1), got $rc" test "$rc" -le 1 || tail -n 5 "$work/accept.err"
check "every node has a verdict and none is UNREACHABLE; every stage ran under Slurm" /usr/bin/python3 -c '
import glob, json, sys
verdict = json.load(open(sys.argv[1] + "/accept.json"))
nodes = sorted(n["host"] for n in verdict["nodes"])
codes = [f["code"] for n in verdict["nodes"] for f in n["findings"]]
launchers = {json.loads(open(f).readline()).get("launcher") for f in glob.glob(sys.argv[1] + "/stages/*/results.jsonl")}
print("cluster:", verdict["cluster"], "findings:", codes, "stage launchers:", launchers)
sys.exit(0 if nodes == open(sys.argv[2]).read().split() and "UNREACHABLE" not in codes and launchers == {"SLURM_*"} else 1)' \
  "$work/accept" "$SLURM_NODES"

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
