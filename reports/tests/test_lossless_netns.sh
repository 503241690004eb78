#!/usr/bin/env bash
# CTest: the TCP lossless verdict (reports/judge/lossless_verdict.hpp) on 4 emulated hosts at 200 Mbit/s.
#   test_lossless_netns.sh ROCEBENCH LOSSLESS_JUDGE NETNS_SH lossy|ecn
# (LOSSLESS_RATE_MBIT, default 200: each link's rate; lower inside an emulated guest, whose CPU cannot fill 200.)
# lossy: host 3's link drops both ways (a tbf queue of ~10 packets): the verdict names host 3 LOSSY, and no other host.
# ecn: fq_codel with ECN under every shaper, ECN on in every host: marks, no host LOSSY; skipped (77)
# where the kernel has no fq_codel. Exit 77 (skipped) without root or network namespaces.
set -uo pipefail
rocebench=$1
judge=$2
bed=$3
mode=$4
source "$(dirname "$bed")/testlib.sh"
source "$(dirname "$bed")/../link.sh"
netns_test_setup rbl
rate_mbit=${LOSSLESS_RATE_MBIT:-200}
rate=${rate_mbit}mbit
link_gbps=$(awk -v m="$rate_mbit" 'BEGIN { print m / 1000 }')
failures=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi; }

incast() {  # incast NAME RC: the incast on the bed, exiting RC (1: the run's own verdict found a host LOSSY), judged into $work/NAME.verdict
  local rc=0
  "$rocebench" probe tcp incast --netns "$hosts" --ranks 4 --duration 1.5 --size 64K --link-gbps "$link_gbps" \
    --results-dir "$work/$1" --deadline 30 >"$work/$1.out" 2>&1 || rc=$?
  [ "$rc" = "$2" ] || { echo "FAIL: $1: incast exited $rc, not $2"; tail "$work/$1.out"; exit 1; }
  "$judge" "$work/$1/results.jsonl" >"$work/$1.verdict" || { echo "FAIL: $1: judge exited $?"; exit 1; }
  echo "--- $1:"; cat "$work/$1.verdict"
}
verdict() { awk -v h="$1" '/^[^ ]/ && $1 == h { print $2 }' "$work/$2.verdict"; }

hosts=$("$bed" up 4 --prefix "$prefix" --subnet 10.79.15 --rate $rate) || { echo "FAIL: bring-up"; exit 1; }
if [ "$mode" = lossy ]; then
# Host 3's link drops both ways: its shaper's queue holds ~10 packets (this kernel may lack sch_netem;
# tbf is what the bed has), where the others' hold 50 ms.
ip netns exec "${prefix}3" tc qdisc replace dev eth0 root handle 1: tbf rate $rate burst $link_burst limit 15kb || exit 1
tc qdisc replace dev "${prefix}3h" root handle 1: tbf rate $rate burst $link_burst limit 15kb || exit 1
incast lossy 1
check "the run's own verdict fails host 3, LOSSY" 'grep -q "^fail: ${prefix}3 under tcp incast: LOSSY" "$work/lossy.out"'
check "host 3 is LOSSY" '[ "$(verdict ${prefix}3 lossy)" = LOSSY ]'
for i in 0 1 2; do check "host $i is not LOSSY" '[ "$(verdict ${prefix}$i lossy)" != LOSSY ] && [ -n "$(verdict ${prefix}$i lossy)" ]'; done
check "the evidence names the counter that rose towards host 3" 'grep -q "tcp_RetransSegs rose by [1-9][0-9]* of [0-9]* tcp_OutSegs while ${prefix}[0-2] sent to ${prefix}3" "$work/lossy.verdict"'
exit $((failures > 0))
fi

# ECN: fq_codel marks (ecn) under every shaper, TCP asks for ECN in every host.
if ! ip netns exec "${prefix}0" tc qdisc replace dev eth0 parent 1:1 handle 10: fq_codel ecn 2>"$work/qdisc.err"; then
  echo "SKIP: this kernel has no fq_codel qdisc to mark ECN with: $(cat "$work/qdisc.err")"; exit 77
fi
for i in 0 1 2 3; do
  ip netns exec "${prefix}$i" sysctl -qw net.ipv4.tcp_ecn=1
  ip netns exec "${prefix}$i" tc qdisc replace dev eth0 parent 1:1 handle 10: fq_codel ecn || exit 1
  tc qdisc replace dev "${prefix}${i}h" parent 1:1 handle 10: fq_codel ecn || exit 1
done
incast ecn 0
for i in 0 1 2 3; do check "host $i is not LOSSY under ECN" '[ "$(verdict ${prefix}$i ecn)" != LOSSY ] && [ -n "$(verdict ${prefix}$i ecn)" ]'; done
check "ECN marks are in the evidence" 'grep -q "ECN marked" "$work/ecn.verdict"'
check "a host marked and not retransmitting is OK, its congestion control at work" \
  'grep -q "ECN marked .* and tcp_RetransSegs did not rise: congestion control at work" "$work/ecn.verdict"'
exit $((failures > 0))
