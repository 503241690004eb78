#!/usr/bin/env bash
# The lossless verdict over verbs, for real (issue #41): boots a bed of 4 soft-RoCE hosts (ci/testbeds/softroce/
# guest.sh run --hosts 4), host LOSSY's link dropping LOSS_PERCENT (netem, both ways; LOSSY -1: no link drops),
# and runs softroce_lossless_guest.sh in every host: host 0 drives a verbs incast across the bed through
# rocebench's agents, every host the receiver once, and judges the records with judge_incast over verbs: host
# LOSSY is LOSSY, named by the rxe counters that rose on its link, and no other host is. Then: nothing the bed
# started is left. When no guest can boot here: skipped (77), failed under CI.
#   usage: test_lossless_softroce.sh ROCEBENCH LOSSLESS_JUDGE SOFTROCE_DIR LOSSY [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") judge=$(realpath "$2") softroce=$(cd "$3" && pwd) lossy=$4 out=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
hosts=4 loss=${LOSS_PERCENT:-1}
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"

why=$("$softroce/guest.sh" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
bed_links=()
((lossy < 0)) || bed_links=(--loss-of "$lossy=$loss")
host_bed $hosts "$softroce" "$here/softroce_lossless_guest.sh" "$rocebench" "$softroce/lib.sh" "$token" "$judge" $lossy
echo "== $failures failure(s)"
((failures == 0))
