#!/usr/bin/env bash
# Run by ctest after the tests (CTEST_CUSTOM_POST_TEST, written by the top CMakeLists.txt): lists every
# skipped test with its reason, so that a skip is never silent in CTest's own output. A gtest skip is
# its GTEST_SKIP() message; any other test that skips (exit 77) ends its output with `SKIP: reason`.
#   usage: skip_reasons.sh [LOG]   (default: ctest's log of the run in progress)
set -uo pipefail
log=${1:-Testing/Temporary/LastTest.log.tmp}
[[ -r $log ]] || log=Testing/Temporary/LastTest.log
[[ -r $log ]] || exit 0
awk '
  function flush() {
    if (name != "" && skipped) printf "  %-60s %s\n", name, (reason != "" ? reason : "(no reason given: a defect)")
    name = ""; skipped = 0; reason = ""; in_out = 0; in_gtest = 0; last = ""
  }
  /^[0-9]+\/[0-9]+ Testing: / { flush(); name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); next }
  name == "" { next }
  /^Output:$/ { in_out = 1; next }
  /^<end of output>$/ {
    in_out = 0
    if (last ~ /^SKIP: /) { skipped = 1; reason = substr(last, 7) }
    next
  }
  /^Skip regular expression found in output/ { skipped = 1; next }
  in_out && /: Skipped$/ { in_gtest = 1; next }
  in_out && in_gtest && (/^\[  SKIPPED \]/ || /^Google Test trace:/) { in_gtest = 0; next }
  in_out && in_gtest { reason = (reason == "" ? $0 : reason " " $0); next }
  in_out && NF { last = $0 }
  END { flush() }
' "$log" | { mapfile -t lines; ((${#lines[@]})) || exit 0
  echo "Skipped tests, each with its reason (${#lines[@]}):"; printf '%s\n' "${lines[@]}"; }
exit 0
