#!/usr/bin/env bash
# rocebench's TCP incast against iperf3's, on emulated hosts (ci/testbeds/netns), interleaved round by
# round (issue #41): host 0 receives from the N-1 others at once for --duration seconds, first
# `rocebench probe tcp incast`, then one iperf3 client a sender into its own iperf3 server on host 0.
# Prints each round's goodput into the receiver (Gbit/s) and Jain's fairness over the senders for
# both tools, then the ratio rocebench / iperf3 as median [min..max] over rounds. Then, with
# --all-receivers, the wall time of one incast in which every host receives in turn.
#   usage: incast_vs_iperf3.sh ROCEBENCH [--hosts 4] [--rounds 6] [--duration 5] [--rate 1gbit]
#                              [--leaf QDISC] [--all-receivers]
# --leaf puts QDISC under every link's shaper, e.g. fq_codel: per-flow fair queuing, as a lossless switch's
# arbitration gives each sender its share (the shaper alone is one FIFO, where a flow can hold half the link
# for a whole turn). Where this kernel lacks it, run the script inside a soft-RoCE guest, whose kernel has it:
#   printf 'exec bash "$@"\n' >/tmp/w.sh; ci/testbeds/softroce/guest.sh run /tmp/w.sh /tmp/out -- \
#     $PWD/ci/bench/incast_vs_iperf3.sh $PWD/build/harness/rocebench --rate 20mbit --leaf 'fq_codel ecn'
# (a leaf with "ecn" also turns ECN on in every host's TCP).
# Targets: goodput >= 0.95x iperf3's, fairness >= 0.95. Needs root; the hosts (prefix rbic,
# 10.86.0.0/24) are torn down on exit. Sockets use the host's default congestion control, printed.
set -euo pipefail
rb=$(realpath "${1:?usage: incast_vs_iperf3.sh ROCEBENCH [options]}")
shift
hosts_n=4 rounds=6 duration=5 rate=1gbit leaf= all_receivers=0
while (($#)); do
  case $1 in
    --hosts) hosts_n=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --leaf) leaf=$2; shift 2 ;;
    --all-receivers) all_receivers=1; shift ;;
    *) echo "incast_vs_iperf3.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
((EUID == 0)) || { echo "incast_vs_iperf3.sh: needs root (network namespaces)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "iperf3 is missing (ci/setup.sh installs it)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
netns=$here/../testbeds/netns/netns.sh
prefix=rbic
bed=(--prefix "$prefix" --subnet 10.86.0)
work=$(mktemp -d /tmp/incast-vs-iperf3.XXXXXX)
export ROCEBENCH_NETNS_STATE=$work/netns
trap 'bash "$netns" down "${bed[@]}" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
hosts=$(bash "$netns" up "$hosts_n" --rate "$rate" "${bed[@]}")
mapfile -t host_lines <"$hosts"
if [[ -n $leaf ]]; then
  for ((k = 0; k < hosts_n; k++)); do  # both ways of each link: eth0 in the host, its veth on the bridge
    # shellcheck disable=SC2086  # the qdisc and its options, as tc takes them
    ip netns exec "${host_lines[k]%% *}" tc qdisc replace dev eth0 parent 1:1 handle 10: $leaf ||
      { echo "incast_vs_iperf3.sh: --leaf '$leaf': tc refused it under the shaper" >&2; exit 2; }
    tc qdisc replace dev "${prefix}${k}h" parent 1:1 handle 10: $leaf
    # A marking leaf ("fq_codel ecn") marks only what asks for ECN.
    if [[ $leaf == *ecn* ]]; then ip netns exec "${host_lines[k]%% *}" sysctl -qw net.ipv4.tcp_ecn=1; fi
  done
fi
receiver_ns=${host_lines[0]%% *} receiver_address=${host_lines[0]#* }
echo "# $hosts_n emulated hosts at $rate${leaf:+ ($leaf under each shaper)}, ${duration} s a round, TCP $(cat /proc/sys/net/ipv4/tcp_congestion_control); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"

table=$work/table.tsv  # round tool goodput fairness
for ((round = 1; round <= rounds; round++)); do
  # Exit 1 is a verdict that failed (a LOSSY or CONGESTED host, said on the first 'fail:' line): the goodput
  # is measured all the same; anything else is a run that did not measure.
  rc=0
  "$rb" probe tcp incast --netns "$hosts" --ranks "$hosts_n" --duration "$duration" --receivers "$receiver_ns" \
    --results-dir "$work/rb-$round" >"$work/rb.log" 2>&1 || rc=$?
  ((rc == 0 || rc == 1)) || { tail -5 "$work/rb.log" >&2; exit 1; }
  ((rc == 0)) || echo "round $round: $(grep -m1 '^fail:' "$work/rb.log")"
  /usr/bin/python3 - "$work/rb-$round/results.jsonl" "$round" >>"$table" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("step") == "microbench.incast" and r.get("status") == "ok" and "goodput_Gbps" in r.get("metrics", {}):
        print(f"{sys.argv[2]}\trocebench\t{r['metrics']['goodput_Gbps']}\t{r['metrics']['fairness_jain']}")
PY
  pids=()
  for ((k = 1; k < hosts_n; k++)); do
    ip netns exec "$receiver_ns" iperf3 -s -1 -D -p $((5400 + k)) --logfile "$work/iperf-server-$k.log"
  done
  sleep 0.5
  for ((k = 1; k < hosts_n; k++)); do
    timeout $((duration + 30)) ip netns exec "${host_lines[k]%% *}" iperf3 -c "$receiver_address" -p $((5400 + k)) \
      -t "$duration" -J >"$work/iperf-$k.json" &
    pids+=($!)
  done
  wait "${pids[@]}"
  /usr/bin/python3 - "$work" "$hosts_n" "$round" >>"$table" <<'PY'
import json, sys
work, n, round_ = sys.argv[1], int(sys.argv[2]), sys.argv[3]
g = [json.load(open(f"{work}/iperf-{k}.json"))["end"]["sum_received"]["bits_per_second"] / 1e9 for k in range(1, n)]
print(f"{round_}\tiperf3\t{sum(g)}\t{sum(g) ** 2 / (len(g) * sum(x * x for x in g))}")
PY
done

/usr/bin/python3 - "$table" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().split("\n") if line]
cells = {(r, tool): (float(g), float(f)) for r, tool, g, f in rows}
rounds = sorted({r for r, _ in cells}, key=int)
spread = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}..{max(v):.3f}]"
print(f"{'round':>5} {'rocebench Gb/s':>14} {'fairness':>8} {'iperf3 Gb/s':>11} {'fairness':>8} {'ratio':>6}")
for r in rounds:
    (rg, rf), (ig, jf) = cells[(r, "rocebench")], cells[(r, "iperf3")]
    print(f"{r:>5} {rg:>14.4f} {rf:>8.3f} {ig:>11.4f} {jf:>8.3f} {rg / ig:>6.3f}")
print(f"goodput rocebench / iperf3: {spread([cells[(r, 'rocebench')][0] / cells[(r, 'iperf3')][0] for r in rounds])}")
for tool in ("rocebench", "iperf3"):
    print(f"fairness {tool}: {spread([cells[(r, tool)][1] for r in rounds])}")
PY

if ((all_receivers)); then
  start=$SECONDS
  "$rb" probe tcp incast --netns "$hosts" --ranks "$hosts_n" --duration "$duration" --results-dir "$work/all" >"$work/all.log" 2>&1 ||
    { tail -5 "$work/all.log" >&2; exit 1; }
  echo "every host receiving in turn: $((SECONDS - start)) s for $hosts_n receivers of $duration s"
fi
