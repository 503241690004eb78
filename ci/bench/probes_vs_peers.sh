#!/usr/bin/env bash
# rocebench's TCP probes next to their peers in one run, pinned the same way, and the ratios:
#   latency  : rocebench probe tcp lat  vs  sockperf ping-pong --tcp, median one-way us, same size:
#              busy     : rocebench --mode busy      vs sockperf --nonblocked --timeout 0 (spins on recv)
#              blocking : rocebench --mode blocking  vs sockperf's blocking form on one socket, which
#                         sleeps in recvfrom() as rocebench sleeps in recv(); sockperf -F epoll (a feed
#                         file, as -F needs) is shown too, for what an epoll wake-up costs on top
#   bandwidth: rocebench probe tcp bw   vs  iperf3 (one stream), Gb/s
# Rounds interleave the tools (the order flips every round), so a load that comes and goes on a
# shared machine hits both; the medians over the rounds are printed last.
# Targets: latency median within 5% of sockperf in each mode; bandwidth >= 95% of iperf3.
# usage: probes_vs_peers.sh ROCEBENCH [--size 64] [--seconds 5] [--rounds 3] [--server-cpu 0 --client-cpu 1]
set -euo pipefail
rocebench=${1:?usage: probes_vs_peers.sh ROCEBENCH [options]}
shift
size=64 seconds=5 rounds=3 scpu=0 ccpu=1 bwsize=131072
while [ $# -gt 0 ]; do
  case $1 in
    --size) size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --server-cpu) scpu=$2; shift 2 ;;
    --client-cpu) ccpu=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for tool in sockperf iperf3 taskset /usr/bin/python3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (ci/setup.sh installs it)" >&2; exit 2; }
done
work=$(mktemp -d)
servers=()
cleanup() { for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
jget() { /usr/bin/python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][-1]; print(r["metrics"][sys.argv[2]])' "$@"; }

# One-way median latency, us, from rocebench (mode busy|blocking).
rb_lat() {
  local p; p=$(port)
  taskset -c "$scpu" "$rocebench" probe tcp lat --server --bind 127.0.0.1 --port "$p" --mode "$1" --deadline 30 2>/dev/null &
  servers+=($!)
  taskset -c "$ccpu" "$rocebench" probe tcp lat --client 127.0.0.1 --port "$p" --mode "$1" --size "$size" \
    --duration "$seconds" --warmup 1000 --results "$work/rb-$1.jsonl" >/dev/null
  wait "${servers[-1]}"
  jget "$work/rb-$1.jsonl" lat_us_p50
}

# One-way median latency, us, from sockperf: busy (--nonblocked --timeout 0 on both sides),
# blocking (one socket: recvfrom), or epoll (blocking in epoll_wait; -F needs a feed file).
sp_lat() {
  local p where=() extra=(); p=$(port)
  where=(--tcp -i 127.0.0.1 -p "$p")
  case $1 in
    busy) extra=(--nonblocked --timeout 0) ;;
    epoll) echo "T:127.0.0.1:$p" >"$work/feed"; where=(-f "$work/feed"); extra=(-F epoll) ;;
  esac
  taskset -c "$scpu" sockperf server "${where[@]}" "${extra[@]}" >"$work/sp-server-$1.txt" 2>&1 &
  local server=$!
  servers+=($server)
  sleep 0.5
  taskset -c "$ccpu" sockperf ping-pong "${where[@]}" -m "$size" -t "$seconds" "${extra[@]}" >"$work/sp-$1.txt" 2>&1
  kill "$server" 2>/dev/null || true
  sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p' "$work/sp-$1.txt" | tail -1
}

rb_bw() {
  local p; p=$(port)
  taskset -c "$scpu" "$rocebench" probe tcp bw --server --bind 127.0.0.1 --port "$p" --deadline 30 2>/dev/null &
  servers+=($!)
  taskset -c "$ccpu" "$rocebench" probe tcp bw --client 127.0.0.1 --port "$p" --size "$bwsize" --duration "$seconds" \
    --results "$work/rb-bw.jsonl" >/dev/null
  wait "${servers[-1]}"
  jget "$work/rb-bw.jsonl" bw_avg_Gbps
}

ip_bw() {
  local p; p=$(port)
  taskset -c "$scpu" iperf3 -s -1 -p "$p" >/dev/null 2>&1 &
  servers+=($!)
  sleep 0.5
  taskset -c "$ccpu" iperf3 -c 127.0.0.1 -p "$p" -t "$seconds" -l "$bwsize" -J >"$work/iperf.json"
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9)' "$work/iperf.json"
}

ratio() { /usr/bin/python3 -c 'import sys; print(f"{float(sys.argv[1])/float(sys.argv[2]):.3f}")' "$1" "$2"; }

echo "probes vs peers: ${size} B latency, ${bwsize} B bandwidth, ${seconds} s each, ${rounds} round(s), server cpu ${scpu}, client cpu ${ccpu}"
printf '%-6s %-34s %12s %12s %8s\n' round measure rocebench peer ratio
: >"$work/rows"
row() {  # round, measure, rocebench, peer
  local r; r=$(ratio "$3" "$4")
  printf '%-6s %-34s %12.3f %12.3f %8s\n' "$1" "$2" "$3" "$4" "$r"
  printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$r" >>"$work/rows"
}
for r in $(seq "$rounds"); do
  # Odd rounds run rocebench first, even rounds the peer first.
  for mode in busy blocking; do
    if [ $((r % 2)) = 1 ]; then a=$(rb_lat "$mode"); b=$(sp_lat "$mode"); else b=$(sp_lat "$mode"); a=$(rb_lat "$mode"); fi
    row "$r" "lat p50 us ($mode)" "$a" "$b"
    if [ "$mode" = blocking ]; then row "$r" "lat p50 us (blocking vs sp epoll)" "$a" "$(sp_lat epoll)"; fi
  done
  if [ $((r % 2)) = 1 ]; then a=$(rb_bw); b=$(ip_bw); else b=$(ip_bw); a=$(rb_bw); fi
  row "$r" "bw Gb/s (1 stream)" "$a" "$b"
done
echo "median over ${rounds} round(s):"
/usr/bin/python3 - "$work/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    measure, a, b, r = line.rstrip("\n").split("\t")
    rows.setdefault(measure, []).append((float(a), float(b), float(r)))
for measure, values in rows.items():
    med = [statistics.median(v[i] for v in values) for i in range(3)]
    spread = max(v[2] for v in values) - min(v[2] for v in values)
    print(f"{'median':<6} {measure:<34} {med[0]:12.3f} {med[1]:12.3f} {med[2]:8.3f}  (ratio range {spread:.3f})")
PY
echo "latency ratio = rocebench / sockperf (target <= 1.05); bandwidth ratio = rocebench / iperf3 (target >= 0.95)"
