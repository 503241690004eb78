#!/usr/bin/env bash
# rocebench's ring allreduce against its peers, in the same run, interleaved round by round:
#   loopback  2 and 4 local ranks: rocebench vs Open MPI's MPI_Allreduce over its TCP BTL and Gloo's ring;
#             sizes 1..16 MiB (x4); target: busbw >= Open MPI's at >= 1 MiB.
#   hosts     4 emulated hosts (ci/testbeds/netns, 1 Gbit/s links), one rank each: iperf3 goodput between
#             two of them, rocebench, Open MPI (default algorithm and forced ring), Gloo's ring;
#             sizes 16 and 64 MiB; targets: busbw >= 97% of the goodput and above every peer. For
#             context, "iperf3 all links": the mean of 4 streams at once, each host to the next.
# usage: allreduce_vs_peers.sh ROCEBENCH [--part loopback|hosts|both] [--rounds 3] [--ranks "2 4"]
#                              [--iters 200] [--host-iters 20] [--rate 1gbit] [--congestion NAME]
#                              [--tcp-sndbuf SIZE]
# Every tool: float32 sum in place, two warm-ups, busbw = algbw * 2(n-1)/n from the slowest rank's
# loop of back-to-back operations over the iterations, as nccl-tests times them; the "best" rows the
# same from each tool's fastest operation (each iteration's slowest rank, the least over the
# iterations), the link's ceiling where the tools reach it, and the "median" rows from the slowest
# rank's median operation (the steady state, without the few operations that a TCP event such as
# BBR's ProbeRTT slowed; taken per rank as the loop is, collectives/README.md). Open MPI gets
# mpi_yield_when_idle so that ranks outnumbering the cores do not spin each other out. A ratio is
# taken within a round (same machine load), then summarised over rounds as median [min..max]. Needs
# root for the emulated hosts.
# Every tool's sockets use the host's default TCP congestion control, printed first; --congestion
# makes NAME the default for the run (the emulated hosts inherit it) and puts the old one back after.
# It matters: under BBR, TCP paces each socket with a timer, and on loopback here both rocebench and
# Open MPI ran at about half their cubic busbw at 1 MiB. --tcp-sndbuf passes rocebench's --tcp-sndbuf
# (0: the kernel's autotuning everywhere; by default rocebench fixes 128K to a peer on the same host
# and autotunes between hosts); the peers keep the kernel's autotuning (collectives/README.md).
set -euo pipefail
rocebench=$(realpath "${1:?usage: allreduce_vs_peers.sh ROCEBENCH [options]}")
shift
here=$(cd "$(dirname "$0")" && pwd)
# 200 loopback iterations: 20 of 1 MiB last ~5 ms, and such short runs were bimodal here (most at
# 3.3-4.2 GB/s, some at 1.3-1.5 with every iteration slow), whatever the tool (collectives/README.md).
# 20 iterations between hosts: a 64 MiB loop then lasts ~17 s, longer than BBR's 10 s ProbeRTT
# period, which every tool's ring pays for in one or more slowed operations; with 8 (~7 s) where the
# probe lands inside the loop decided the ratio (collectives/README.md).
part=both rounds=3 rank_counts="2 4" iters=200 host_iters=20 rate=1gbit hosts_n=4 congestion= sndbuf_option=()
while (($#)); do
  case $1 in
    --part) part=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --ranks) rank_counts=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --host-iters) host_iters=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --congestion) congestion=$2; shift 2 ;;
    --tcp-sndbuf) sndbuf_option=(--tcp-sndbuf "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $part =~ ^(loopback|hosts|both)$ ]] || { echo "--part is loopback, hosts or both" >&2; exit 2; }
for tool in mpicxx mpirun iperf3 /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (ci/setup.sh installs it)" >&2; exit 2; }
done
[ -e /usr/include/gloo/allreduce.h ] || { echo "Gloo is missing: apt-get install libgloo-dev (ci/setup.sh)" >&2; exit 2; }

work=$(mktemp -d)
prefix=arb$$
prefix=${prefix:0:6}
export ROCEBENCH_NETNS_STATE=$work/netns
congestion_file=/proc/sys/net/ipv4/tcp_congestion_control
host_congestion=$(cat "$congestion_file")
cleanup() {
  if [ -d "$ROCEBENCH_NETNS_STATE" ]; then "$here/../testbeds/netns/netns.sh" down --prefix "$prefix" >/dev/null 2>&1 || true; fi
  [ "$(cat "$congestion_file")" = "$host_congestion" ] || echo "$host_congestion" >"$congestion_file"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
if [ -n "$congestion" ]; then
  echo "$congestion" >"$congestion_file" || { echo "cannot make $congestion the default congestion control" >&2; exit 2; }
fi
echo "TCP congestion control: $(cat "$congestion_file") (the host's default: $host_congestion)"
default_sndbuf="its default: 128K to a peer on the same host, autotuned between hosts"
echo "rocebench's TCP send buffer: ${sndbuf_option[*]:-$default_sndbuf}"
mpicxx -O2 -o "$work/mpi_allreduce" "$here/mpi_allreduce.cpp"
g++ -std=c++17 -O2 -o "$work/gloo_allreduce" "$here/gloo_allreduce.cpp" -lgloo -pthread
table=$work/table.tsv  # round part ranks tool bytes busbw_GBps
: >"$table"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi_common=(--oversubscribe --mca btl tcp,self --mca mpi_yield_when_idle 1)
ring_algorithm=(--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4)

# Appends "ROUND PART RANKS TOOL BYTES BUSBW" for each "BYTES ... BUSBW FASTEST_OP_BUSBW MEDIAN_OP_BUSBW"
# line a peer printed, and the fastest and the median operation's busbw under parts "PART best" and
# "PART median".
add_peer_rows() {
  awk -v tag="$1" '{split(tag, t, "\t"); print tag "\t" $1 "\t" $4
    split("best median", kind, " "); for (k = 1; k <= 2; k++) print t[1] "\t" t[2] " " kind[k] "\t" t[3] "\t" t[4] "\t" $1 "\t" $(4 + k)}' \
    "$2" >>"$table"
}
add_rocebench_rows() {
  /usr/bin/python3 - "$1" "$2" >>"$table" <<'PY'
import json, sys
tag = sys.argv[1].split("\t")
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("step") == "collectives.allreduce" and r.get("status") == "ok":
        m = r["metrics"]
        print(f'{sys.argv[1]}\t{r["params"]["bytes"]}\t{m["busbw_GBps"]}')
        # busbw is bytes over time: the fastest and the median operation's are the loop's scaled by the times.
        for part, op_us in (("best", r["samples"]["min"]), ("median", m["time_us_p50"])):
            part_tag = "\t".join([tag[0], f"{tag[1]} {part}"] + tag[2:])
            print(f'{part_tag}\t{r["params"]["bytes"]}\t{m["busbw_GBps"] * m["time_us"] / op_us}')
    elif r.get("step") == "collectives.allreduce" and r.get("kind") == "result":
        sys.exit(f"rocebench allreduce recorded {r.get('status')}: {r.get('reason')}")
PY
}
fail() { echo "allreduce_vs_peers: $1 failed; its output:" >&2; cat "$2" >&2; exit 3; }
# Every peer's run has a deadline: once an Open MPI daemon failed to start in one emulated host and
# mpirun waited for it without end. A peer that runs past it fails the run, as any failed peer does.
limit=(timeout --kill-after=10 300)
# with_one_retry WHAT OUTFILE ERRFILE COMMAND...: runs COMMAND under the deadline, and once more if it
# fails, each try writing its output afresh. In the emulated hosts Open MPI sometimes never starts
# (3 of ~50 runs over two sessions; twice an orted missing in one host, mpirun waiting until the
# deadline): a second try is a fresh launch, and the log says so.
with_one_retry() {
  local what=$1 output=$2 errors=$3 attempt rc
  shift 3
  for attempt in 1 2; do
    "${limit[@]}" "$@" >"$output" 2>"$errors" && return 0
    rc=$?
    echo "allreduce_vs_peers: $what failed on try $attempt (exit $rc$( ((rc == 124 || rc == 137)) && echo ", past the deadline"))" >&2
  done
  return 1
}

# Rank i of a Gloo job: gloo_run RANKS STORE ADDRESS_OF_RANK... (one per rank; "netns:addr" runs it in netns)
gloo_run() {
  local n=$1 store=$2 min=$3 max=$4 factor=$5 count=$6 pids=() i=0
  shift 6
  mkdir -p "$store"
  for where in "$@"; do
    local run=()
    [[ $where == *:* ]] && run=(ip netns exec "${where%%:*}")
    "${limit[@]}" "${run[@]}" "$work/gloo_allreduce" "$i" "$n" "$store" "${where#*:}" "$min" "$max" "$factor" "$count" \
      >"$work/gloo.$i.out" 2>&1 &
    pids+=($!)
    i=$((i + 1))
  done
  local rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  rm -rf "$store"
  return $rc
}

loopback_round() {
  local round=$1 n min=$((1 << 20)) max=$((16 << 20))
  for n in $rank_counts; do
    local tag="$round	loopback	$n"
    "$rocebench" allreduce --ranks "$n" -b "$min" -e "$max" -f 4 -n "$iters" -w 2 --placement in "${sndbuf_option[@]}" \
      --results-dir "$work/rb-$round-$n" >"$work/rb.log" 2>&1 || fail rocebench "$work/rb.log"
    add_rocebench_rows "$tag	rocebench" "$work/rb-$round-$n/results.jsonl"
    "${limit[@]}" mpirun "${mpi_common[@]}" -np "$n" --mca btl_tcp_if_include lo "$work/mpi_allreduce" "$min" "$max" 4 "$iters" \
      >"$work/mpi.txt" 2>"$work/mpi.err" || fail "Open MPI" "$work/mpi.err"
    add_peer_rows "$tag	openmpi" "$work/mpi.txt"
    local addrs=()
    for ((i = 0; i < n; i++)); do addrs+=(127.0.0.1); done
    gloo_run "$n" "$work/store" "$min" "$max" 4 "$iters" "${addrs[@]}" || fail Gloo "$work/gloo.0.out"
    add_peer_rows "$tag	gloo" "$work/gloo.0.out"
  done
}

# iperf_streams TOOL I...: 5 s iperf3 streams at once, each from host I to host I+1; records their
# mean goodput in GB/s as TOOL's row.
iperf_streams() {
  local tool=$1 i k pids=() files=()
  shift
  for i in "$@"; do
    ip netns exec "${host_names[(i + 1) % hosts_n]}" iperf3 -s -1 -D -p $((5201 + i)) --logfile "$work/iperf-server.log"
  done
  sleep 0.3
  for i in "$@"; do
    files+=("$work/iperf-$i.json")
    "${limit[@]}" ip netns exec "${host_names[i]}" iperf3 -c "${host_addresses[(i + 1) % hosts_n]}" -p $((5201 + i)) \
      -t 5 -J >"$work/iperf-$i.json" &
    pids+=($!)
  done
  for k in "${!pids[@]}"; do wait "${pids[k]}" || fail "iperf3 (host ${*:k+1:1} to the next)" "${files[k]}"; done
  /usr/bin/python3 -c 'import json, sys
bps = [json.load(open(f))["end"]["sum_received"]["bits_per_second"] for f in sys.argv[3:]]
print(f"{sys.argv[1]}\t{sys.argv[2]}\t0\t{sum(bps) / len(bps) / 8e9}")' "$tag" "$tool" "${files[@]}" >>"$table"
}

# The tools of a hosts round, each a function (bash's dynamic scope gives them the round's locals).
hosts_iperf3() {
  # Goodput of one TCP stream host 0 -> host 1, as GB/s to compare with busbw; then the same with
  # every link loaded, each host streaming to the next as the ring sends (for context: the target
  # stays against one stream).
  iperf_streams goodput 0
  iperf_streams ring_goodput $(seq 0 $((hosts_n - 1)))
}

hosts_rocebench() {
  "$rocebench" allreduce --netns "$hosts_file" --ranks "$hosts_n" -b "$min" -e "$max" -f 4 -n "$host_iters" -w 2 \
    --placement in "${sndbuf_option[@]}" --results-dir "$work/rbh-$round" >"$work/rb.log" 2>&1 || fail rocebench "$work/rb.log"
  add_rocebench_rows "$tag	rocebench" "$work/rbh-$round/results.jsonl"
}

hosts_openmpi() {
  # mpirun runs in host 0 (its daemons call back to it); the agent starts a daemon in the host
  # that owns an address.
  for variant in default ring; do
    local extra=()
    [ "$variant" = ring ] && extra=("${ring_algorithm[@]}")
    with_one_retry "Open MPI ($variant)" "$work/mpi.txt" "$work/mpi.err" \
      ip netns exec "${host_names[0]}" mpirun "${mpi_common[@]}" -np "$hosts_n" --hostfile "$work/mpi-hosts" \
      --mca plm_rsh_agent "$work/netns-agent" --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include eth0 \
      --mca btl_tcp_if_include eth0 "${extra[@]}" "$work/mpi_allreduce" "$min" "$max" 4 "$host_iters" \
      || fail "Open MPI ($variant)" "$work/mpi.err"
    add_peer_rows "$tag	openmpi-$variant" "$work/mpi.txt"
  done
}

hosts_gloo() {
  local i where=()
  for i in "${!host_names[@]}"; do where+=("${host_names[i]}:${host_addresses[i]}"); done
  gloo_run "$hosts_n" "$work/store" "$min" "$max" 4 "$host_iters" "${where[@]}" || fail Gloo "$work/gloo.0.out"
  add_peer_rows "$tag	gloo" "$work/gloo.0.out"
}

hosts_round() {
  local round=$1 min=$((16 << 20)) max=$((64 << 20)) tag="$1	hosts	$hosts_n" tool tools=(iperf3 rocebench openmpi gloo)
  # Every other round in reverse: the tool that runs right after iperf3's streams (or first on quiet
  # links) is the same tool in no two rounds. In one order, 10 rounds read rocebench/Gloo 0.986 at
  # 64 MiB; the two alone, interleaved, 0.995.
  ((round % 2 == 0)) && tools=(gloo openmpi rocebench iperf3)
  for tool in "${tools[@]}"; do "hosts_$tool"; done
}

if [ "$part" != loopback ]; then
  [ "$(id -u)" = 0 ] || { echo "the emulated hosts need root (network namespaces)" >&2; exit 2; }
  hosts_file=$("$here/../testbeds/netns/netns.sh" up "$hosts_n" --prefix "$prefix" --rate "$rate")
  host_names=() host_addresses=()
  while read -r ns address; do host_names+=("$ns"); host_addresses+=("$address"); done <"$hosts_file"
  awk '{print $2 " slots=1"}' "$hosts_file" >"$work/mpi-hosts"
  cat >"$work/netns-agent" <<EOF
#!/bin/sh
# Open MPI's rsh agent: "agent [options] ADDRESS COMMAND..." runs COMMAND in the emulated host with ADDRESS.
while [ "\${1#-}" != "\$1" ]; do shift; done
ns=\$(awk -v a="\$1" '\$2 == a {print \$1}' "$hosts_file")
shift
[ -n "\$ns" ] || { echo "netns-agent: no emulated host has that address" >&2; exit 1; }
exec ip netns exec "\$ns" /bin/sh -c "\$*"
EOF
  chmod +x "$work/netns-agent"
fi

for ((round = 1; round <= rounds; round++)); do
  echo "round $round/$rounds" >&2
  [ "$part" != hosts ] && loopback_round "$round"
  [ "$part" != loopback ] && hosts_round "$round"
done

/usr/bin/python3 - "$table" <<'PY'
import collections, statistics, sys
rows = collections.defaultdict(dict)  # (part, ranks, bytes) -> {(round, tool): busbw}
references = {"goodput": "iperf3 goodput", "ring_goodput": "iperf3 all links"}
reference, ours = collections.defaultdict(dict), []  # reference[tool][round]
for line in open(sys.argv[1]):
    rnd, part, ranks, tool, size, busbw = line.split("\t")
    if tool in references:
        reference[tool][rnd] = float(busbw)
    elif tool == "rocebench":
        ours.append((rnd, part, int(ranks), int(size), float(busbw)))
    else:
        rows[(part, int(ranks), int(size))][(rnd, tool)] = float(busbw)
# rocebench rounds sizes down to whole segments: its figure joins the peers' nearest size.
for rnd, part, ranks, size, busbw in ours:
    sizes = [s for (p, n, s) in rows if (p, n) == (part, ranks)] or [size]
    rows[(part, ranks, min(sizes, key=lambda s: abs(s - size)))][(rnd, "rocebench")] = busbw

def spread(values):
    return f"{statistics.median(values):.3f} [{min(values):.3f}..{max(values):.3f}]"

print(f"{'part':<15} {'ranks':>5} {'bytes':>9} {'tool':<16} {'busbw GB/s median [min..max]':>30} {'rocebench/tool median [min..max]':>34}")
for (part, ranks, size), cells in sorted(rows.items()):
    rounds = sorted({r for r, _ in cells})
    tools = sorted({t for _, t in cells}, key=lambda t: (t != "rocebench", t))
    for tool in tools:
        values = [cells[(r, tool)] for r in rounds if (r, tool) in cells]
        ratios = [cells[(r, "rocebench")] / cells[(r, tool)] for r in rounds if (r, tool) in cells and (r, "rocebench") in cells]
        ratio_text = spread(ratios) if tool != "rocebench" else ""
        print(f"{part:<15} {ranks:>5} {size:>9} {tool:<16} {spread(values):>30} {ratio_text:>34}")
    for tool, label in references.items():
        by_round = reference[tool]
        if not part.startswith("hosts") or not by_round:
            continue
        ratios = [cells[(r, "rocebench")] / by_round[r] for r in rounds if (r, "rocebench") in cells and r in by_round]
        print(f"{part:<15} {ranks:>5} {size:>9} {label:<16} {spread([by_round[r] for r in rounds if r in by_round]):>30} "
              f"{spread(ratios):>34}")
print(f"{len({l.split(chr(9))[0] for l in open(sys.argv[1])})} round(s); ratios are taken within a round")
print('"best" rows: each tool\'s fastest operation (each iteration\'s slowest rank, the least over the iterations);'
      ' "median" rows: the slowest rank\'s median operation; the others: the slowest rank\'s loop over the iterations')
PY
