#!/usr/bin/env bash
# rocebench's verbs tests on a real (soft-RoCE) device: boots the ci/testbeds/softroce guest and runs
# softroce_verbs_guest.sh PART in it (checks: every test and the fault paths; compare: next to perftest).
# Skipped (77) when no guest can boot here (no qemu, guest kernel or root; ci/setup.sh installs them), and
# for compare when the rounds stay too noisy to tell agreement from a factor 2 (compare.py says which test).
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) part=$3  # checks | compare
here=$(cd "$(dirname "$0")" && pwd)
"$softroce/guest.sh" check || exit 77
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-540} "$softroce/guest.sh" run "$here/softroce_verbs_guest.sh" "$out" -- \
  "$rocebench" "$softroce/lib.sh" "$part" "${SOFTROCE_ROUNDS:-3}"
