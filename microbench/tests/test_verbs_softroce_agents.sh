#!/usr/bin/env bash
# RoCE across hosts started by rocebench itself: boots a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run
# --hosts 2) and runs softroce_agents_guest.sh in both: each host starts `rocebench agent`, host 0 runs the
# all-pairs matrix over verbs with `rocebench run --netns` on a hosts file with agent=PORT (rank 1 started on
# host 1 by its agent). Then: nothing the bed started is left. When no guest can boot here: skipped (77),
# failed under CI.
#   usage: test_verbs_softroce_agents.sh ROCEBENCH SOFTROCE_DIR [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) out=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"

why=$("$softroce/guest.sh" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
start=$SECONDS
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-540} "$softroce/guest.sh" run --hosts 2 "$here/softroce_agents_guest.sh" "$out" -- \
  "$rocebench" "$softroce/lib.sh" "$token" &
bed=$!
wait $bed
rc=$?
echo "the bed ran $((SECONDS - start)) s"
check "host 0's checks pass (guest.sh exit $rc)" test $rc = 0
check "host 1's checks pass (its exit code $(cat "$out/host1/exit_code" 2>/dev/null))" test "$(cat "$out/host1/exit_code" 2>/dev/null)" = 0
left=$(bed_leftovers $bed)
check "nothing of the bed is left (qemu, namespace, bridge, tap)${left:+: $left}" test -z "$left"
echo "== $failures failure(s)"
((failures == 0))
