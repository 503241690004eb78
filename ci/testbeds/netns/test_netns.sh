#!/usr/bin/env bash
# CTest: the emulated-hosts test bed delivers the link rate it promises, ranks sharing a host get the
# same-host send buffer, and a rank killed in one emulated host is reported by the ranks in the
# others. Exit 77 (skipped) without root or netns.
set -uo pipefail
rocebench=$1
here=$(cd "$(dirname "$0")" && pwd)
bed=$here/netns.sh
source "$here/testlib.sh"
netns_test_setup rbt
for tool in iperf3 tc /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (ci/setup.sh installs it)"; exit 1; }
done

failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

# Goodput of one TCP stream from host 0 to host 1, in Mbit/s, measured by iperf3.
goodput_mbps() {
  ip netns exec "${prefix}1" iperf3 -s -1 -D -p 5201 --logfile "$work/iperf-server.log"
  for _ in $(seq 100); do ip netns exec "${prefix}1" ss -ltn | grep -q ':5201 ' && break; sleep 0.05; done
  ip netns exec "${prefix}0" iperf3 -c "$1" -p 5201 -t 3 -J >"$work/iperf.json" || return 1
  /usr/bin/python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e6))' "$work/iperf.json"
}
within() { /usr/bin/python3 -c 'import sys; v,lo,hi=map(float,sys.argv[1:]); sys.exit(0 if lo<=v<=hi else 1)' "$@"; }

# 1. The shaper, not the veth, sets the rate: 1 Gbit/s and 200 Mbit/s links.
for rate in 1000 200; do
  hosts=$("$bed" up 2 --prefix "$prefix" --rate "${rate}mbit") || { echo "FAIL: bring-up"; exit 1; }
  mbps=$(goodput_mbps "$(awk 'NR==2 {print $2}' "$hosts")")
  echo "measured ${mbps:-nothing} Mbit/s TCP goodput on a ${rate} Mbit/s link"
  check "a ${rate} Mbit/s link carries 90-100% of its rate" within "${mbps:-0}" "$((rate * 90 / 100))" "$rate"
done
# RPS on both ends of every link, so that no flow is reordered between CPUs.
rps_of() { "${@:2}" sh -c "cat /sys/class/net/$1/queues/rx-*/rps_cpus" | tr -d ',0\n'; }
for i in 0 1; do
  check "host $i's eth0 spreads flows over the CPUs (RPS)" test -n "$(rps_of eth0 ip netns exec "$prefix$i")"
  check "the bridge side of host $i's link does too" test -n "$(rps_of "${prefix}${i}h")"
done

# 2. Four emulated hosts, one rank each: the run sees four hosts; rank 2 killed is reported.
hosts=$("$bed" up 4 --prefix "$prefix" --rate 1gbit) || { echo "FAIL: bring-up"; exit 1; }
cat >"$work/ok.json" <<'JSON'
{"name": "netns-smoke", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 20}}]}
JSON
"$rocebench" run "$work/ok.json" --netns "$hosts" --ranks 4 --results-dir "$work/ok" --deadline 20 >"$work/ok.out" 2>"$work/ok.err"
check "a 4-host run succeeds" test $? = 0
check "the run record names 4 hosts" /usr/bin/python3 -c '
import json, sys
run = json.loads(open(sys.argv[1]).readline())
names = sorted(h["hostname"] for h in run["hosts"])
sys.exit(0 if len(names) == 4 and all(n.startswith(sys.argv[2]) for n in names) else 1)' "$work/ok/results.jsonl" "$prefix"

# 4 ranks on 2 of the hosts (rank i in host i mod 2): each rank has a peer on its own host, which gets
# the small same-host send buffer, and peers on the other, left to the kernel's autotuning.
head -n 2 "$hosts" >"$work/two-hosts"
"$rocebench" allreduce --netns "$work/two-hosts" --ranks 4 -b 1M -e 1M -n 2 -w 1 --placement in \
  --results-dir "$work/mixed" --deadline 60 >"$work/mixed.out" 2>&1
check "an allreduce over 2 hosts with 2 ranks each succeeds" test $? = 0
check "its record says which send buffer each kind of peer got" /usr/bin/python3 -c '
import json, re, sys
records = [json.loads(l) for l in open(sys.argv[1])]
ok = [r for r in records if r.get("step") == "collectives.allreduce" and r.get("status") == "ok"]
setting = ok[0]["params"]["tcp_sndbuf"] if ok else None
print("tcp_sndbuf:", setting)
sys.exit(0 if setting and re.fullmatch(r"[0-9]+ same host, auto other hosts", setting) else 1)' "$work/mixed/results.jsonl"

cat >"$work/long.json" <<'JSON'
{"name": "netns-long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 3000, "interval_ms": 10}}]}
JSON
"$rocebench" run "$work/long.json" --netns "$hosts" --ranks 4 --results-dir "$work/long" --deadline 15 >"$work/long.out" 2>"$work/long.err" &
launcher=$!
# The run record is written once every rank has joined: from then on rank 2 is in the step.
for _ in $(seq 300); do grep -q '"kind":"run"' "$work/long/results.jsonl" 2>/dev/null && break; sleep 0.1; done
victim=$(sed -n 's/^rocebench run: rank 2 started, pid \([0-9]*\).*/\1/p' "$work/long.err")
check "rank 2's pid was reported at launch" test -n "$victim"
start=$SECONDS
kill -9 "$victim"
wait "$launcher"
rc=$?
check "the run exits 3 (infrastructure failure), got $rc" test "$rc" = 3
check "the survivors stopped within the deadline ($((SECONDS - start)) s)" test $((SECONDS - start)) -le 20
check "the loss names rank 2 and its emulated host" grep -q "rank 2 on host ${prefix}2 was lost" "$work/long.err"
check "results hold the rank.lost event" grep -q '"event":"rank.lost"' "$work/long/results.jsonl"

"$bed" down --prefix "$prefix"
check "tear-down leaves no namespace" test -z "$(ip netns list | grep "^$prefix" || true)"
echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
