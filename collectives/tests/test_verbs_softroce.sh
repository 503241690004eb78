#!/usr/bin/env bash
# CTest entry: the verbs transport for real, on rxe0 in a soft-RoCE qemu guest. When no guest can boot
# here (no qemu, no guest kernel, not root) or the test bed is not in this checkout: skipped (77), and
# failed under CI (ci/testbeds/unavailable.sh).
#   usage: test_verbs_softroce.sh ROCEBENCH GUEST_SH COLLECTIVES_TESTS
set -euo pipefail
bin=$1 guest=$2 gtests=$3
. "$(dirname "$0")/../../ci/testbeds/unavailable.sh"
[[ -x $guest ]] || testbed_unavailable "no soft-RoCE test bed at $guest"
why=$("$guest" check 2>&1) || testbed_unavailable "${why:-guest.sh check: no soft-RoCE guest can boot here}"
echo "$why"
out=$(mktemp -d /tmp/verbs-softroce.XXXXXX)
trap 'rm -rf "$out"' EXIT
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-1200} "$guest" run "$(dirname "$0")/verbs_softroce_guest.sh" "$out" -- "$bin" "$gtests"
