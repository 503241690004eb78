#!/usr/bin/env bash
# CTest: `rocebench run --launcher srun` on a real Slurm cluster (slurm.sh: slurmctld and munged on a
# login host, one slurmd in each of 4 emulated hosts). A run succeeds across 4 distinct hosts; a task
# killed is reported by rank and host and the run exits 3; SIGTERM or SIGINT to the launcher stops every
# rank and job (squeue) and removes a module command's temporary plan;
# `rocebench accept --launcher srun` gives every node a verdict, and with --slurm-drain / --slurm-resume
# drains a failing node and returns it once it passes, leaving an administrator's drain as it is.
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

# Acting on the verdict (#44). An administrator has drained node 3 for a reason of their own. Node 1's
# link is slowed to a tenth: `accept --slurm-drain --slurm-resume` on nodes 0-2 drains node 1 with
# rocebench's reason, and only it. Node 1's link restored, the same command on all four nodes returns
# node 1 to service and leaves node 3 drained with the administrator's reason. Slurm starts no job on a
# drained node, so the second acceptance reaches the nodes through mpirun (the remote-start agent).
node() { sed -n "$(($1 + 1))p" "$SLURM_NODES"; }
on_login() { "$here/host_exec.sh" "$SLURM_LOGIN" "$@"; }
link_rate() {  # link_rate HOST RATE: both directions of HOST's link, as netns.sh shapes them
  ip netns exec "$1" tc qdisc replace dev eth0 root tbf rate "$2" burst 128kb latency 50ms &&
    tc qdisc replace dev "${1}h" root tbf rate "$2" burst 128kb latency 50ms
}
drain_reasons() { on_login sinfo --noheader --Node --format='%N|%T|%E' | awk -F'|' '$2 ~ /drain/ {print $1 "|" $3}' | sort -u; }
accept_acting() {  # accept_acting LAUNCHER NODES_FILE OUT
  on_login "$rocebench" accept --launcher "$1" --hostfile "$2" --results-dir "$3" --deadline 30 \
    --slurm-drain --slurm-resume >"$3.out" 2>"$3.err" &
  wait $!
}
on_login scontrol update nodename="$(node 3)" state=drain reason="admin: fan replaced"
head -n 3 "$SLURM_NODES" >"$work/nodes012"
link_rate "$(node 1)" 100mbit
accept_acting srun "$work/nodes012" "$work/drain"
rc=$?
link_rate "$(node 1)" 1gbit
sed -n '/^host /,$p' "$work/drain.out"
check "accept --slurm-drain with node 1 slowed fails (exit 1), got $rc" test "$rc" = 1 || tail -n 5 "$work/drain.err"
drain_reasons >"$work/drained"
check "node 1 and node 3 drained, nodes 0 and 2 not: $(tr '\n' ' ' <"$work/drained")" \
  test "$(cut -d'|' -f1 "$work/drained" | tr '\n' ' ')" = "$(node 1) $(node 3) "
check "node 1's reason is rocebench's and names its link" grep -q "^$(node 1)|rocebench LINK: " "$work/drained"
check "node 3 keeps the administrator's reason" grep -qx "$(node 3)|admin: fan replaced" "$work/drained"
export OMPI_MCA_plm_rsh_agent="$here/host_exec.sh --rsh"
accept_acting mpirun "$SLURM_NODES" "$work/resume"
rc=$?
sed -n '/^host /,$p' "$work/resume.out"
drain_reasons >"$work/drained"
check "node 1 passes again and is resumed: drained now: $(tr '\n' ' ' <"$work/drained")" \
  sh -c "! grep -q '^$(node 1)|' '$work/drained' && grep -q '^slurm: $(node 1): scontrol update nodename=$(node 1) state=resume' '$work/resume.out'"
check "node 3 is left drained with the administrator's reason" grep -qx "$(node 3)|admin: fan replaced" "$work/drained"
check "accept says why it left node 3 alone" grep -q "^slurm: $(node 3): left as it is: drained by someone else (admin: fan replaced)" "$work/resume.out"

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
