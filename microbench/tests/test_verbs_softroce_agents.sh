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
two_host_bed "$softroce" "$here/softroce_agents_guest.sh" "$rocebench" "$softroce/lib.sh" "$token"
echo "== $failures failure(s)"
((failures == 0))
