#!/usr/bin/env bash
# RoCE across hosts: boots a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts 2) and runs
# softroce_hosts_guest.sh in both: rocebench's verbs probe next to perftest from host 0 to host 1 (the coarse
# check of compare.py; the rounds stay in OUTDIR/host0/compare.txt for the fine one), and host 1's rxe0 counters
# rose by what host 0 sent. Then: nothing the bed started (qemu, namespace, bridge, tap) is left. First, without
# a boot, guest.sh's bad input. When no guest can boot here: skipped (77), failed under CI.
#   usage: test_verbs_softroce_hosts.sh ROCEBENCH SOFTROCE_DIR [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) out=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$softroce/../unavailable.sh"
if [[ -z $out ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
else
  rm -rf "$out" && mkdir -p "$out"  # no rounds of an earlier run are left to be judged
fi
failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "PASS $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}

echo "== bad input: exit 2, naming the flag (nothing boots)"
echo true >"$out/true.sh"
bad_input() {  # bad_input FLAG_NAMED ARGS...
  local said rc
  said=$("$softroce/guest.sh" run "${@:2}" "$out/true.sh" 2>&1); rc=$?
  [[ $rc == 2 && $said == *"$1"* ]] || { echo "  exit $rc: $said"; return 1; }
}
check "--hosts 0" bad_input "--hosts '0'" --hosts 0
check "--hosts two" bad_input "--hosts 'two'" --hosts two
check "--rate 0mbit" bad_input "--rate '0mbit'" --hosts 2 --rate 0mbit
check "--rate 1gb (tc has no such unit)" bad_input "--rate '1gb'" --hosts 2 --rate 1gb
check "--rate-of 1=fast" bad_input "--rate-of 1 'fast'" --hosts 2 --rate-of 1=fast
check "--rate-of for host 2 of 2" bad_input "--rate-of: there is no host '2'" --hosts 2 --rate-of 2=1gbit
check "--loss-of for host 3 of 2" bad_input "--loss-of: there is no host '3'" --hosts 2 --loss-of 3=1
check "--loss-of 1=150" bad_input "--loss-of 1 '150'" --hosts 2 --loss-of 1=150
check "--rate without --hosts" bad_input "--rate needs --hosts" --rate 1gbit

why=$("$softroce/guest.sh" check 2>&1) || testbed_unavailable "${why:-guest.sh check: no soft-RoCE guest can boot here}"
echo "$why"
echo "== 2 hosts: host 0 -> host 1"
start=$SECONDS
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-540} "$softroce/guest.sh" run --hosts 2 "$here/softroce_hosts_guest.sh" "$out" -- \
  "$rocebench" "$softroce/lib.sh" "${SOFTROCE_ROUNDS:-3}" &
bed=$!
wait $bed
rc=$?
echo "the bed ran $((SECONDS - start)) s"
check "host 0's checks pass (guest.sh exit $rc)" test $rc = 0
check "host 1's checks pass (its exit code $(cat "$out/host1/exit_code" 2>/dev/null))" test "$(cat "$out/host1/exit_code" 2>/dev/null)" = 0
check "no qemu of the bed is left" test -z "$(pgrep -f -- "-name softroce-$bed-host")"
check "the bed's namespace is gone" test -z "$(ip netns list | awk -v ns="softroce-$bed" '$1 == ns')"
# The bridge and taps lived only in that namespace; none may have fallen back into this one.
check "no bridge or tap of the bed is left" test -z "$(ip -o link show | grep -E ': (br0|tap[0-9]+)[:@]')"
echo "== $failures failure(s)"
((failures == 0))
