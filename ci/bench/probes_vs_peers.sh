#!/usr/bin/env bash
# rocebench's TCP probes next to their peers in one run, pinned the same way, and the ratios:
#   latency  : rocebench probe tcp lat  vs  sockperf ping-pong --tcp   (blocking, and busy-poll:
#              rocebench --mode busy vs sockperf --nonblocked --timeout 0), median one-way us
#   bandwidth: rocebench probe tcp bw   vs  iperf3 (one stream), Gb/s
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

# One-way median latency, us, from sockperf (busy = --nonblocked --timeout 0 on both sides).
sp_lat() {
  local p extra=(); p=$(port)
  [ "$1" = busy ] && extra=(--nonblocked --timeout 0)
  taskset -c "$scpu" sockperf server --tcp -i 127.0.0.1 -p "$p" "${extra[@]}" >/dev/null 2>&1 &
  local server=$!
  servers+=($server)
  sleep 0.5
  taskset -c "$ccpu" sockperf ping-pong --tcp -i 127.0.0.1 -p "$p" -m "$size" -t "$seconds" "${extra[@]}" >"$work/sp-$1.txt" 2>&1
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
printf '%-6s %-24s %12s %12s %8s\n' round measure rocebench peer ratio
for r in $(seq "$rounds"); do
  for mode in busy blocking; do
    a=$(rb_lat "$mode"); b=$(sp_lat "$mode")
    printf '%-6s %-24s %12.2f %12.2f %8s\n' "$r" "lat p50 us ($mode)" "$a" "$b" "$(ratio "$a" "$b")"
  done
  a=$(rb_bw); b=$(ip_bw)
  printf '%-6s %-24s %12.3f %12.3f %8s\n' "$r" "bw Gb/s (1 stream)" "$a" "$b" "$(ratio "$a" "$b")"
done
echo "latency ratio = rocebench / sockperf (target <= 1.05); bandwidth ratio = rocebench / iperf3 (target >= 0.95)"
