#!/usr/bin/env bash
# RoCE across hosts: boots a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts 2) and runs
# softroce_hosts_guest.sh in both: rocebench's verbs probe next to perftest from host 0 to host 1 (the coarse
# check of compare.py; the rounds stay in OUTDIR/host0/compare.txt for the fine one), host 1's rxe0 counters
# rose by what host 0 sent, and each host's netcheck judged its rxe0 (OUTDIR/hostK/netcheck.txt). Then: nothing the bed started (qemu, namespace, bridge, tap) is left. (The bed's own
# faults and bad input: ci/testbeds/softroce/test_bed.sh.) When no guest can boot here: skipped (77), failed
# under CI.
#   usage: test_verbs_softroce_hosts.sh ROCEBENCH SOFTROCE_DIR [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) out=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"

why=$("$softroce/guest.sh" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
echo "$why"
echo "== 2 hosts: host 0 -> host 1"
host_bed 2 "$softroce" "$here/softroce_hosts_guest.sh" "$rocebench" "$softroce/lib.sh" "${SOFTROCE_ROUNDS:-3}"
echo "== $failures failure(s)"
((failures == 0))
