#!/usr/bin/env bash
# Unit tests under AddressSanitizer and UndefinedBehaviorSanitizer: builds the `sanitize` preset
# (build-sanitize/: gcc -O1, any UBSan finding aborts) and runs the gtest binaries of the modules that
# read user input without starting processes: common, reports and netcheck.
# Why only those: collectives_tests and harness_tests start the rocebench binary, so sanitizing them
# means building all of it (models and oneDNN included) a second time, and their tests run ranks over
# sockets and namespaces for minutes; microbench and models are mostly timing and compute. The parsers
# of every input (plans, hostfiles, wire, importers, netcheck) also run sanitized under ci/fuzz.sh.
# Not run by CI: its build alone does not fit CI's +10 min. Here (2 vCPUs shared with other builds) the
# two smaller binaries took 45 min to build and reports_tests' 39 objects were still to come; the tests
# themselves are quick (common 6 s, netcheck 25 s). Run it by hand: ci/sanitize.sh [GTEST_FILTER]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
mkdir -p build-sanitize
cmake --preset sanitize >build-sanitize/build.log 2>&1 && cmake --build --preset sanitize >>build-sanitize/build.log 2>&1 ||
  { tail -30 build-sanitize/build.log; echo "FAIL: the sanitized unit tests do not build (build-sanitize/build.log)"; exit 1; }
echo "built in $((SECONDS - start)) s"
# Leaks count as findings; the first report of any kind fails the binary.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failures=0
for test in common/tests/common_tests reports/tests/reports_tests netcheck/tests/netcheck_tests; do
  t0=$SECONDS
  log=build-sanitize/$(basename "$test").log
  if build-sanitize/$test --gtest_filter="${1:-*}" >"$log" 2>&1; then
    echo "ok    $(basename "$test"): $(grep -m1 -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log") in $((SECONDS - t0)) s"
  else
    failures=$((failures + 1))
    echo "FAIL  $(basename "$test") in $((SECONDS - t0)) s ($log):"
    grep -E -m5 -A8 'ERROR: |runtime error|\[  FAILED  \]' "$log" | head -40
  fi
done
echo "== $failures binary(ies) failed, $((SECONDS - start)) s in all"
[[ $failures == 0 ]]
