#!/usr/bin/env bash
# rocebench's ring allreduce against Open MPI's MPI_Allreduce over its TCP BTL, in the same run, on
# loopback with 2 and 4 local ranks: busbw per size and the ratio (target: >= 1 at >= 1 MiB).
#   ci/bench/allreduce_vs_peers.sh build/harness/rocebench [--ranks "2 4"] [--iters 20]
# Sizes 1 MiB .. 16 MiB (x4). Both sides: float32 sum, in place, busbw = algbw * 2(n-1)/n from the
# slowest rank's time per iteration. Open MPI gets mpi_yield_when_idle so that ranks outnumbering
# the cores do not spin each other out.
set -euo pipefail
rocebench=$(realpath "$1")
shift
rank_counts="2 4"
iters=20
while (($#)); do
  case $1 in
    --ranks) rank_counts=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
command -v mpicxx >/dev/null || { echo "mpicxx missing: apt-get install libopenmpi-dev" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicxx -O2 -o "$work/mpi_allreduce" "$(dirname "$0")/mpi_allreduce.cpp"
min=$((1 << 20)) max=$((16 << 20))

printf '%6s %10s %14s %14s %7s\n' ranks bytes rocebench_GBps openmpi_GBps ratio
for n in $rank_counts; do
  "$rocebench" allreduce --ranks "$n" -b "$min" -e "$max" -f 4 -n "$iters" -w 2 --placement in \
    --results-dir "$work/rb$n" >"$work/rb$n.log" 2>&1
  mpirun --allow-run-as-root --oversubscribe -np "$n" --mca btl tcp,self --mca btl_tcp_if_include lo \
    --mca mpi_yield_when_idle 1 "$work/mpi_allreduce" "$min" "$max" 4 "$iters" >"$work/mpi$n.txt"
  /usr/bin/python3 - "$work/rb$n/results.jsonl" "$work/mpi$n.txt" "$n" <<'PY'
import json, sys
ours = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("step") == "collectives.allreduce" and r.get("status") == "ok":
        ours[r["params"]["bytes"]] = r["metrics"]["busbw_GBps"]
for line in open(sys.argv[2]):
    size, _, _, busbw = line.split()
    size, busbw = int(size), float(busbw)
    # rocebench rounds sizes to whole segments: take the nearest size it measured.
    mine = ours[min(ours, key=lambda s: abs(s - size))]
    print(f"{sys.argv[3]:>6} {size:>10} {mine:>14.3f} {busbw:>14.3f} {mine / busbw:>7.2f}")
PY
done
