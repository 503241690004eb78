#!/usr/bin/env bash
# rocebench's verbs probe against perftest in the soft-RoCE guest, side by side in interleaved rounds:
# t_typical of write/send/read latency at 64 B and write BW average at 64 KiB, with the ratios.
#   ci/testbeds/softroce/bench.sh ROCEBENCH [ROUNDS (5)] [LAT_ITERS (1000)] [BW_ITERS (1000)]
# Targets: latency within 5% of perftest's t_typical, bandwidth >= 98% of perftest's BW average.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 ROCEBENCH [ROUNDS] [LAT_ITERS] [BW_ITERS]" >&2; exit 2; }
rocebench=$(realpath "$1")
guest_script=$(mktemp)
trap 'rm -f "$guest_script"' EXIT
cat >"$guest_script" <<'GUEST'
SOFTROCE_DIR=$(dirname "$2")
. "$2"
softroce_rounds "$1" "$3" "$4" "$5" >rounds.txt
softroce_compare rounds.txt || true
GUEST
"$here/guest.sh" run "$guest_script" -- "$rocebench" "$here/lib.sh" "${2:-5}" "${3:-1000}" "${4:-1000}"
