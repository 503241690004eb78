#!/usr/bin/env bash
# Verbs against TCP across the soft-RoCE bed (issue #40's benchmark): 4 hosts on links of RATE, each
# running `rocebench agent`; host 0 runs rocebench's ring allreduce across them, float32 sum in place,
# 16 and 64 MiB, once over --transport verbs and once over tcp in each round (the order alternates), and
# prints each round's busbw and the verbs / tcp ratio, then the median [min..max] over the rounds.
#   ci/testbeds/softroce/bench_hosts.sh ROCEBENCH [ROUNDS (3)] [RATE (50mbit)] [OUTDIR]
# Target: verbs busbw >= 0.95x tcp's at both sizes. The guests are TCG-emulated: both transports are
# CPU-bound inside them well below 1 Gbit/s, so RATE is one that both can fill (the incast moved
# 0.13-0.17 Gb/s into one host). A benchmark, not a test: needs root and a bootable guest (guest.sh check).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 ROCEBENCH [ROUNDS] [RATE] [OUTDIR]" >&2; exit 2; }
rocebench=$(realpath "$1") rounds=${2:-3} rate=${3:-50mbit} out=${4:-}
. "$here/testlib.sh"
bed_outdir "$out"
# A round moves ~8 Gbit over each host's link (both transports, 1 + 3 operations at 16 and 64 MiB): 400 s at 20 Mbit/s.
export SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-$((300 + rounds * 1000))}
guest_script=$(mktemp)
trap 'rm -f "$guest_script"' EXIT
cat >"$guest_script" <<'GUEST'
RB=$1
. "$2"
export ROCEBENCH_AGENT_TOKEN=$3
rounds=$4
AGENTS_END_S=$((rounds * 1000))  # the other hosts wait for host 0's rounds (at 20 Mbit/s ~450 s each)
. "$(dirname "$2")/agents.sh"
agents_up
if [ "$SOFTROCE_HOST" = 0 ]; then
  r=1
  while [ $r -le "$rounds" ]; do
    order="verbs tcp"
    [ $((r % 2)) = 0 ] && order="tcp verbs"
    for t in $order; do
      "$RB" allreduce --netns hosts-agents --ranks "$world" --transport $t --algorithm ring -b 16M -e 64M -f 4 -w 1 -n 3 \
        --placement in --results-dir /tmp/ar-$t-$r --deadline 300 >ar-$t-$r.out 2>&1 || fail "round $r over $t: exit $?"
      # "busbw ROUND TRANSPORT BYTES GB/s" from the records (keys in order: metrics before params)
      sed -n 's/.*"busbw_GBps":\([0-9.e+-]*\).*"bytes":\([0-9]*\).*/\2 \1/p' /tmp/ar-$t-$r/results.jsonl |
        while read -r bytes busbw; do echo "busbw $r $t $bytes $busbw"; done | tee -a busbw.txt
    done
    r=$((r + 1))
  done
fi
agents_end
[ $failures -eq 0 ]
GUEST
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
bed_links=(--rate "$rate")
host_bed 4 "$here" "$guest_script" "$rocebench" "$here/lib.sh" "$token" "$rounds"
/usr/bin/python3 - "$out/host0/busbw.txt" "$rate" <<'PY'
import collections, statistics, sys
rows = [l.split()[1:] for l in open(sys.argv[1]) if l.startswith("busbw ")]
by = collections.defaultdict(dict)  # (round, bytes) -> transport -> busbw
for r, t, b, g in rows:
    by[(int(r), int(b))][t] = float(g) * 8  # GB/s to Gb/s
print(f"4 soft-RoCE hosts, links {sys.argv[2]}: ring allreduce busbw (Gb/s), float32 in place")
for size in sorted({b for _, b in by}):
    ratios = []
    for (r, b), g in sorted(by.items()):
        if b == size and "verbs" in g and "tcp" in g:
            ratios.append(g["verbs"] / g["tcp"])
            print(f"  {size >> 20} MiB round {r}: verbs {g['verbs']:.4f}  tcp {g['tcp']:.4f}  ratio {ratios[-1]:.3f}")
    if ratios:
        print(f"  {size >> 20} MiB verbs/tcp: median {statistics.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}] over {len(ratios)} round(s)")
PY
echo "== $failures failure(s)"
((failures == 0))
