#!/usr/bin/env bash
# Unit tests under AddressSanitizer and UndefinedBehaviorSanitizer. CI runs every module's through
# ci/fuzz.sh --ci, built in build-fuzz/ beside the fuzz targets (clang, the same sanitizers, the
# libraries compiled once for both):
#   ci/sanitize.sh --tests-in build-fuzz common transport microbench collectives models netcheck reports harness
# That build has no rocebench binary: the tests that start it (harness's test_run.cpp, the allreduce and
# probe command lines, a few more that skip there) run unsanitized in the main build only.
# By hand, with gcc: the `sanitize` preset (build-sanitize/: -O1, any UBSan finding aborts) for common,
# transport, reports and netcheck: ci/sanitize.sh [GTEST_FILTER]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
build=build-sanitize modules=(common transport reports netcheck) filter='*'
if [[ ${1:-} == --tests-in ]]; then  # built already (by ci/fuzz.sh): run those modules' tests
  build=${2:?--tests-in DIR MODULE...} modules=("${@:3}")
else
  filter=${1:-*}
  mkdir -p build-sanitize
  cmake --preset sanitize >build-sanitize/build.log 2>&1 && cmake --build --preset sanitize >>build-sanitize/build.log 2>&1 ||
    { tail -30 build-sanitize/build.log; echo "FAIL: the sanitized unit tests do not build (build-sanitize/build.log)"; exit 1; }
  echo "built in $((SECONDS - start)) s"
fi
# Leaks count as findings; the first report of any kind fails the binary.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=1  # oneDNN in models_tests, as ctest runs it: OpenMP's spinning barriers crawl on shared vCPUs
failures=0
for module in "${modules[@]}"; do
  test=$module/tests/${module}_tests
  [[ -e $build/$test ]] || test=$module/${module}_tests  # models keeps its tests beside it
  t0=$SECONDS
  log=$build/$(basename "$test").log
  if "$build/$test" --gtest_filter="$filter" >"$log" 2>&1; then
    skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?, listed below:/, \1 skipped/p' "$log")
    echo "ok    $(basename "$test"): $(grep -m1 -o '[0-9]* tests\? from [0-9]* test suites\? ran' "$log")$skipped in $((SECONDS - t0)) s"
  else
    failures=$((failures + 1))
    echo "FAIL  $(basename "$test") in $((SECONDS - t0)) s ($log):"
    grep -E -m5 -A8 'ERROR: |runtime error|\[  FAILED  \]' "$log" | head -40
  fi
done
echo "== $failures binary(ies) failed, $((SECONDS - start)) s in all"
[[ $failures == 0 ]]
