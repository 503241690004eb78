#!/usr/bin/env bash
# RoCE across hosts, driven by rocebench itself: boots a bed of 4 soft-RoCE hosts (ci/testbeds/softroce/guest.sh
# run --hosts 4), host 3's link shaped to SLOW_RATE, and runs softroce_agents_guest.sh in every host: each starts
# `rocebench agent`, and host 0 drives the others through them (a hosts file with agent=PORT): `accept --quick`
# over verbs names host 3, and only it, LINK, after every host's netcheck read its rxe0; `report --accept`
# judges the same; `train --transport verbs` at 1, 2 and 3 ranks. Then: nothing the bed started is left. When
# no guest can boot here: skipped (77), failed under CI.
#   usage: test_verbs_softroce_agents.sh ROCEBENCH SOFTROCE_DIR [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) out=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
hosts=4 slow=3 slow_rate=${SLOW_RATE:-20mbit}
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"

why=$("$softroce/guest.sh" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
bed_links=(--rate-of "$slow=$slow_rate")
host_bed $hosts "$softroce" "$here/softroce_agents_guest.sh" "$rocebench" "$softroce/lib.sh" "$token" $slow
echo "== $failures failure(s)"
((failures == 0))
