# Sourced by test bed tests. `testbed_unavailable REASON`: the test bed cannot start here. Under CI
# (CI=true), where ci/setup.sh has installed everything as root, that is a broken set-up: the test
# fails (exit 1) with the reason. Elsewhere it is skipped (exit 77), saying why on one last line
# `SKIP: reason` (what ci/skip_reasons.sh lists after the tests).
testbed_unavailable() {
  if [ "${CI:-}" = true ]; then
    echo "FAIL: CI=true, yet the test bed cannot start: ${*//$'\n'/; }"
    exit 1
  fi
  echo "SKIP: ${*//$'\n'/; }"
  exit 77
}
