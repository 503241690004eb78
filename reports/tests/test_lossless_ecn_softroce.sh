#!/usr/bin/env bash
# CTest: the TCP twin's ECN case of the lossless verdict (test_lossless_netns.sh ecn: fq_codel marking under
# every shaper of 4 emulated hosts, an incast, no host LOSSY and ECN marks in the evidence), run inside one
# soft-RoCE guest (ci/testbeds/softroce/guest.sh run): this host's kernel may have no ECN-marking qdisc, the
# guest's Debian 6.1 kernel has fq_codel built in. The links run at 20 Mbit/s, a rate the guest's emulated CPU
# fills, so that the shaper's queue (and not the CPU) is where the incast waits. When no guest can boot here:
# skipped (77), failed under CI; inside the guest nothing may skip.
#   test_lossless_ecn_softroce.sh ROCEBENCH LOSSLESS_JUDGE NETNS_SH SOFTROCE_DIR
set -uo pipefail
rocebench=$(realpath "$1") judge=$(realpath "$2") bed=$(realpath "$3") softroce=$(cd "$4" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$softroce/../unavailable.sh"
why=$("$softroce/guest.sh" check 2>&1) || testbed_unavailable "${why:-guest.sh check: no soft-RoCE guest can boot here}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The guest runs `sh SCRIPT ARGS`; the test is bash.
printf '%s\n' 'LOSSLESS_RATE_MBIT=20 exec bash "$@"' >"$work/guest.sh"
rc=0
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-400} "$softroce/guest.sh" run "$work/guest.sh" "$work/out" -- \
  "$here/test_lossless_netns.sh" "$rocebench" "$judge" "$bed" ecn || rc=$?
case $rc in
  0) echo "ok: the ECN case passed inside the guest" ;;
  77) echo "FAIL: the ECN case skipped inside the guest, whose kernel should have what it needs"; exit 1 ;;
  *) echo "FAIL: the ECN case exited $rc inside the guest (console: last lines)"; tail -5 "$work/out/console.log" 2>/dev/null; exit 1 ;;
esac
