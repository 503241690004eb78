#!/usr/bin/env bash
# rocebench's verbs tests on a real (soft-RoCE) device: boots the ci/testbeds/softroce guest and runs
# softroce_verbs_guest.sh PART in it (checks: every test and the fault paths; compare: next to perftest,
# the coarse check). OUTDIR, when given, keeps what the guest wrote (compare: its rounds in compare.txt).
# When no guest can boot here (no qemu, guest kernel or root; ci/setup.sh installs them): skipped (77),
# and failed under CI (ci/testbeds/unavailable.sh).
#   usage: test_verbs_softroce.sh ROCEBENCH SOFTROCE_DIR checks|compare [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) part=$3 out=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"
why=$("$softroce/guest.sh" check 2>&1) || testbed_unavailable "${why:-guest.sh check: no soft-RoCE guest can boot here}"
echo "$why"
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-540} "$softroce/guest.sh" run "$here/softroce_verbs_guest.sh" "$out" -- \
  "$rocebench" "$softroce/lib.sh" "$part" "${SOFTROCE_ROUNDS:-3}"
