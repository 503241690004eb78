#!/usr/bin/env bash
# CTest entry: the verbs transport for real, on rxe0 in a soft-RoCE qemu guest. Exit 77 (skip) when no
# guest can boot here (no qemu, no guest kernel, not root) or the test bed is not in this checkout.
#   usage: test_verbs_softroce.sh ROCEBENCH GUEST_SH
set -euo pipefail
bin=$1 guest=$2
[[ -x $guest ]] || { echo "no soft-RoCE test bed at $guest"; exit 77; }
"$guest" check || exit 77
out=$(mktemp -d /tmp/verbs-softroce.XXXXXX)
trap 'rm -rf "$out"' EXIT
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-1200} "$guest" run "$(dirname "$0")/verbs_softroce_guest.sh" "$out" -- "$bin"
