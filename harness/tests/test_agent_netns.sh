#!/usr/bin/env bash
# CTest: ranks started through `rocebench agent` on 2 emulated hosts, as on machines the launcher
# cannot enter. Each host runs an agent in its network namespace and a UTS namespace of its own, and
# the hosts file names it by that hostname (no such network namespace exists: the agent is the only
# way in). The launcher runs on host 0. A run succeeds with rank 1 recorded on the second host; an
# agent's child killed mid-run is reported lost by rank and host; a launcher killed mid-run leaves
# no rank behind; SIGTERM stops the agents, and no agent child is left. Exit 77 (skipped) without
# root or network namespaces.
#   usage: test_agent_netns.sh ROCEBENCH NETNS_SH
set -uo pipefail
rb=$1
bed=$2
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbag
bed_work=$work
source "$(dirname "$0")/../../ci/cli_test_lib.sh"
agents=()
cleanup() {
  ((${#agents[@]})) && kill -TERM "${agents[@]}" 2>/dev/null
  wait
  "$bed" down --prefix "$prefix" >/dev/null 2>&1
  rm -rf "$work" "$bed_work"
}
trap cleanup EXIT

subnet=10.81.0
port=7411
"$bed" up 2 --prefix "$prefix" --subnet "$subnet" --rate 1gbit >/dev/null || fail "bring-up"
ROCEBENCH_AGENT_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
export ROCEBENCH_AGENT_TOKEN
on_host0() { ip netns exec "${prefix}0" "$@"; }  # where the launcher runs, as on a cluster's first node

for i in 0 1; do
  ip netns exec "$prefix$i" unshare --uts sh -c 'hostname "$1" && exec "$2" agent --listen "$3"' sh \
    "${prefix}m$i" "$rb" "$subnet.$((i + 1)):$port" 2>"$work/agent$i.log" &
  agents+=($!)
  printf '%sm%d %s.%d agent=%d\n' "$prefix" "$i" "$subnet" $((i + 1)) "$port" >>"$work/hosts"
done
for i in 0 1; do
  for _ in $(seq 100); do grep -q "listening on" "$work/agent$i.log" && break; sleep 0.1; done
  grep -q "listening on" "$work/agent$i.log" || { cat "$work/agent$i.log"; fail "agent $i did not start listening"; }
done
ip netns list | grep -q "^${prefix}m" && fail "a network namespace has a host's name: the test would not show the agent is the way in"
children_of_agents() { for a in "${agents[@]}"; do pgrep -P "$a"; done; }

# 1. A run across the two hosts.
cat >"$work/meet.json" <<'JSON'
{"name": "agent-meet", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 20}}]}
JSON
expect_rc 0 on_host0 "$rb" run "$work/meet.json" --netns "$work/hosts" --ranks 2 --results-dir "$work/ok" --deadline 30
/usr/bin/python3 - "$work/ok/results.jsonl" "$prefix" <<'PY' || fail "the records' hosts"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
prefix = sys.argv[2]
hosts = sorted(h["hostname"] for h in records[0]["hosts"])
by_rank = {r.get("rank"): r.get("host") for r in records if r.get("kind") == "result"}
print("run record hosts:", hosts, "result hosts by rank:", by_rank)
sys.exit(not (hosts == [prefix + "m0", prefix + "m1"] and by_rank == {0: prefix + "m0", 1: prefix + "m1"}))
PY
grep -q "(rank 1) ended: exit 0" "$work/agent1.log" || fail "agent 1 did not run rank 1"

# 2. Rank 1 killed on its host, mid-run: the launcher names it by rank and host.
cat >"$work/long.json" <<'JSON'
{"name": "agent-long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 3000, "interval_ms": 10}}]}
JSON
rank1_pids() { sed -n 's/.*: started pid \([0-9]*\) (rank 1).*/\1/p' "$work/agent1.log"; }
earlier=$(rank1_pids | wc -l)
on_host0 "$rb" run "$work/long.json" --netns "$work/hosts" --ranks 2 --results-dir "$work/long" --deadline 20 >"$work/long.out" 2>&1 &
launcher=$!
# Rank 0 runs through its agent too, in a copy of the results folder that comes back only at the end: its
# records cannot say the run is under way (waiting for them once let the whole 30 s run pass, and the kill
# missed). Agent 1's log names this run's rank 1; 2 s later it is mid-run (a start takes well under 1 s).
for _ in $(seq 300); do (($(rank1_pids | wc -l) > earlier)) && break; sleep 0.1; done
victim=$(rank1_pids | sed -n "$((earlier + 1))p")
[[ -n $victim ]] || fail "agent 1 logged no pid for this run's rank 1"
sleep 2
start=$SECONDS
kill -9 "$victim"
wait "$launcher"
rc=$?
cat "$work/long.out"
[[ $rc == 3 ]] || fail "the run exits $rc, not 3 (a rank lost)"
((SECONDS - start <= 25)) || fail "the run took $((SECONDS - start)) s to end after the loss"
grep -q "rank 1 on host ${prefix}m1 was lost" "$work/long.out" || fail "the loss does not name rank 1 and host ${prefix}m1"
grep -q '"event":"rank.lost"' "$work/long/results.jsonl" || fail "no rank.lost record"

# 3. The launcher killed mid-run: its relays die with it, and the agents stop the ranks.
# (ip netns exec execs the launcher: $! is its pid.)
ip netns exec "${prefix}0" "$rb" run "$work/long.json" --netns "$work/hosts" --ranks 2 --results-dir "$work/killed" --deadline 20 \
  >"$work/killed.out" 2>&1 &
launcher=$!
for _ in $(seq 300); do [[ -n $(children_of_agents) ]] && break; sleep 0.1; done
[[ -n $(children_of_agents) ]] || fail "no rank ran under the agents"
sleep 2  # mid-run, as above
kill -9 "$launcher"
wait "$launcher" 2>/dev/null
for _ in $(seq 100); do [[ -z $(children_of_agents) ]] && break; sleep 0.1; done
[[ -z $(children_of_agents) ]] || fail "ranks outlived their killed launcher: $(children_of_agents | tr '\n' ' ')"
grep -q "connection lost" "$work/agent1.log" || fail "agent 1 did not log the lost connection"

# 4. SIGTERM stops the agents; nothing of theirs is left.
kill -TERM "${agents[@]}"
for a in "${agents[@]}"; do
  wait "$a"
  rc=$?
  [[ $rc == 0 ]] || fail "an agent exited $rc on SIGTERM"
done
agents=()
for i in 0 1; do
  [[ -z $(ip netns pids "$prefix$i") ]] || fail "processes left in host $i: $(ip netns pids "$prefix$i" | tr '\n' ' ')"
done
echo "ok: ranks started through agents on 2 emulated hosts, losses named by rank and host, nothing left behind"
