#!/usr/bin/env bash
# ci/skip_reasons.sh on a ctest log: a gtest skip gives its GTEST_SKIP() message (without the trace), a
# test whose output ends with `SKIP: reason` gives that reason, a passing test that printed a SKIP line
# earlier is not listed, and a gtest skip without a message is named a defect.
#   usage: test_skip_reasons.sh SKIP_REASONS_SH
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
section() {  # NAME OUTPUT_LINES... ; the last argument may be "gtest-skip"
  local name=$1; shift
  printf '1/4 Testing: %s\n1/4 Test: %s\nCommand: "x"\nOutput:\n----------------------------------------------------------\n' "$name" "$name"
  local line gtest=no
  for line in "$@"; do [[ $line == gtest-skip ]] && gtest=yes || printf '%s\n' "$line"; done
  printf '<end of output>\nTest time =   0.01 sec\n----------------------------------------------------------\n'
  if [[ $gtest == yes ]]; then printf 'Test Pass Reason:\nSkip regular expression found in output. Regex=[x]\n'
  else printf 'Test Passed.\n'; fi
  printf '"%s" end time: Dec 01 20:57 UTC\n----------------------------------------------------------\n\n' "$name"
}
{
  section Gpu.Skips "[ RUN      ] Gpu.Skips" "/src/test.cpp:51: Skipped" "engine gpu: no GPU" \
    "Google Test trace:" "/src/test.cpp:117: graph with 4 nodes" "[  SKIPPED ] Gpu.Skips (0 ms)" gtest-skip
  section testbed "booting" "SKIP: emulated hosts need root (network namespaces)"
  section passes "SKIP: a sub-check said this" "all good"
  section Silent.Skip "/src/t.cpp:3: Skipped" "" "[  SKIPPED ] Silent.Skip (0 ms)" gtest-skip
} >"$work/LastTest.log"
bash "$1" "$work/LastTest.log" | tee "$work/out"
expect() { grep -qE -- "$1" "$work/out" || { echo "FAIL: no line matching: $1"; exit 1; }; }
expect '^Skipped tests, each with its reason \(3\):$'
expect '^  Gpu\.Skips +engine gpu: no GPU$'
expect '^  testbed +emulated hosts need root \(network namespaces\)$'
expect '^  Silent\.Skip +\(no reason given: a defect\)$'
! grep -q passes "$work/out" || { echo "FAIL: a passing test is listed as skipped"; exit 1; }
[[ -z $(bash "$1" /dev/null) ]] || { echo "FAIL: an empty log lists something"; exit 1; }
echo "ok"
