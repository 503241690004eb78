#!/usr/bin/env bash
# CTest: `rocebench run --launcher srun` on a real Slurm cluster (slurm.sh: slurmctld and munged on a
# login host, one slurmd in each of 4 emulated hosts). A run succeeds across 4 distinct hosts; a task
# killed is reported by rank and host and the run exits 3; SIGTERM or SIGINT to the launcher stops every
# rank and job (squeue) and removes a module command's temporary plan;
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
launch_command() { local command=$1; shift; exec "$here/host_exec.sh" "$SLURM_LOGIN" "$rocebench" "$command" --launcher srun --hostfile "$SLURM_NODES" "$@"; }
launcher_jobs() { "$here/host_exec.sh" "$SLURM_LOGIN" squeue --noheader --format '%i %j %T' 2>&1; }  # an error is output too: never a vacuous pass

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
accept_checks srun SLURM_* "$SLURM_LOGIN" "$SLURM_NODES"

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
