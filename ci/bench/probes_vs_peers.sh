#!/usr/bin/env bash
# rocebench's TCP probes next to their peers in one run, pinned the same way, and the ratios:
#   latency  : rocebench probe tcp lat  vs  sockperf ping-pong --tcp, median one-way us, same size:
#              busy     : rocebench --mode busy      vs sockperf --nonblocked --timeout 0 (spins on recv)
#              blocking : rocebench --mode blocking  vs sockperf's blocking form on one socket, which
#                         sleeps in recvfrom() as rocebench sleeps in recv(); sockperf -F epoll (a feed
#                         file, as -F needs) is shown too, for what an epoll wake-up costs on top
#   bandwidth: rocebench probe tcp bw   vs  iperf3 (one stream), Gb/s
# Both tools make the same two syscalls per round trip (send, then recv/recvfrom on one blocking or
# non-blocking socket, TCP_NODELAY, 64 B each way) and report half the round trip; each tool's median
# here is computed the same way from its raw samples (rocebench's record values, sockperf --full-log).
# Blocking latency on a VM is the vCPU wake-up path, so it follows the machine's load: a round trip
# either finds the peer's vCPU running (~9 us one-way here) or halted (~30 us, far more when the host
# is busy), and that mix moves within seconds. So each latency round runs sockperf, rocebench, sockperf
# (A-B-A: a load that drifts steadily cancels in rocebench / mean of the two sockperf runs), prints
# sockperf's second run over its first ("peer A/A", the noise floor of the round), and each run's
# share of "running" round trips (under twice the fastest run's 1st percentile).
# Bandwidth rounds are A-B-A too (iperf3, rocebench, iperf3). The medians over the rounds come last.
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
# The one-way samples of a run, one per line: rocebench's record values or sockperf's full log.
samples_of() {
  /usr/bin/python3 - "$1" <<'PY'
import json, sys
path = sys.argv[1]
if path.endswith(".jsonl"):
    values = [json.loads(l) for l in open(path)][-1]["samples"]["values"]
else:  # sockperf --full-log: "packet, txTime(sec), rxTime(sec), rtt/2(usec)" rows
    values = [float(l.split(",")[3]) for l in open(path) if l.count(",") == 3 and l.split(",")[0].strip().isdigit()]
print("\n".join(map(str, values)))
PY
}

# One-way latency samples, us, from rocebench (mode busy|blocking), into $work/rb-MODE.samples.
rb_lat() {
  local p; p=$(port)
  taskset -c "$scpu" "$rocebench" probe tcp lat --server --bind 127.0.0.1 --port "$p" --mode "$1" --deadline 30 2>/dev/null &
  servers+=($!)
  taskset -c "$ccpu" "$rocebench" probe tcp lat --client 127.0.0.1 --port "$p" --mode "$1" --size "$size" \
    --duration "$seconds" --warmup 1000 --results "$work/rb-$1" >/dev/null
  wait "${servers[-1]}"
  samples_of "$(ls -t "$work/rb-$1"/*/results.jsonl | head -1)" >"$work/rb-$1.samples"
}

# One-way latency samples, us, from sockperf into $work/sp-KIND.samples: busy (--nonblocked --timeout 0 on both sides),
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
  taskset -c "$ccpu" sockperf ping-pong "${where[@]}" -m "$size" -t "$seconds" "${extra[@]}" \
    --full-log "$work/sp-$1.csv" >"$work/sp-$1.txt" 2>&1
  kill "$server" 2>/dev/null || true
  samples_of "$work/sp-$1.csv" >"$work/sp-$1.samples"
}

# "median share" of each sample file (shares: see the header), one line per file.
medians_and_shares() {
  /usr/bin/python3 - "$@" <<'PY'
import statistics, sys
runs = [sorted(float(x) for x in open(f)) for f in sys.argv[1:]]
threshold = 2 * min(v[len(v) // 100] for v in runs)
for v in runs:
    print(statistics.median(v), f"{sum(x < threshold for x in v) / len(v):.2f}")
PY
}

rb_bw() {
  local p; p=$(port)
  taskset -c "$scpu" "$rocebench" probe tcp bw --server --bind 127.0.0.1 --port "$p" --deadline 30 2>/dev/null &
  servers+=($!)
  taskset -c "$ccpu" "$rocebench" probe tcp bw --client 127.0.0.1 --port "$p" --size "$bwsize" --duration "$seconds" \
    --results "$work/rb-bw" >/dev/null
  wait "${servers[-1]}"
  jget "$(ls -t "$work/rb-bw"/*/results.jsonl | head -1)" bw_avg_Gbps
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
printf '%-6s %-38s %12s %12s %8s %s\n' round measure rocebench peer ratio "running share"
: >"$work/rows"
row() {  # round, measure, rocebench, peer[, note]
  local r; r=$(ratio "$3" "$4")
  printf '%-6s %-38s %12.3f %12.3f %8s %s\n' "$1" "$2" "$3" "$4" "$r" "${5:-}"
  printf '%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$r" >>"$work/rows"
}
for r in $(seq "$rounds"); do
  for mode in busy blocking; do
    sp_lat "$mode"; mv "$work/sp-$mode.samples" "$work/sp-$mode-before.samples"
    rb_lat "$mode"
    sp_lat "$mode"
    mapfile -t m < <(medians_and_shares "$work/sp-$mode-before.samples" "$work/rb-$mode.samples" "$work/sp-$mode.samples")
    read -r sp1 share1 <<<"${m[0]}"; read -r rb share_rb <<<"${m[1]}"; read -r sp2 share2 <<<"${m[2]}"
    peer=$(/usr/bin/python3 -c 'import sys; print((float(sys.argv[1]) + float(sys.argv[2])) / 2)' "$sp1" "$sp2")
    row "$r" "lat p50 us ($mode)" "$rb" "$peer" "rocebench $share_rb, sockperf $share1 $share2"
    row "$r" "peer A/A ($mode: sockperf 2nd/1st)" "$sp2" "$sp1"
  done
  sp_lat epoll
  mapfile -t m < <(medians_and_shares "$work/rb-blocking.samples" "$work/sp-epoll.samples")
  read -r rb share_rb <<<"${m[0]}"; read -r sp share_sp <<<"${m[1]}"
  row "$r" "lat p50 us (blocking vs sp epoll)" "$rb" "$sp" "rocebench $share_rb, sockperf $share_sp"
  ip1=$(ip_bw); a=$(rb_bw); ip2=$(ip_bw)
  row "$r" "bw Gb/s (1 stream)" "$a" "$(/usr/bin/python3 -c 'import sys; print((float(sys.argv[1]) + float(sys.argv[2])) / 2)' "$ip1" "$ip2")"
  row "$r" "peer A/A (bw: iperf3 2nd/1st)" "$ip2" "$ip1"
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
    ratios = [v[2] for v in values]
    print(f"{'median':<6} {measure:<38} {med[0]:12.3f} {med[1]:12.3f} {med[2]:8.3f}  (ratio range {min(ratios):.3f}..{max(ratios):.3f})")
PY
echo "latency ratio = rocebench / sockperf (target <= 1.05); bandwidth ratio = rocebench / iperf3 (target >= 0.95)"
