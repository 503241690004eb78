#!/usr/bin/env bash
# The README's second set-up command (build + all tests) is the command .ci/run runs, verbatim.
set -euo pipefail
root=$1
ci_command=$(grep -v '^#' "$root/.ci/run" | grep -E 'ctest' | head -1)
[ -n "$ci_command" ] || { echo ".ci/run runs no ctest command"; exit 1; }
if grep -qxF -- "$ci_command" "$root/README.md"; then
  echo "README and .ci/run agree: $ci_command"
else
  echo "README.md does not contain .ci/run's test command verbatim: $ci_command"
  exit 1
fi
