#!/usr/bin/env bash
# Every shipped published scale-out table (models/published/*.json; issue #42) predicted point by
# point from its one-GPU figure, the model's gradients and its fabric, with the error per point.
#   usage: predict_published.sh ROCEBENCH [TABLE...]   (default: every shipped table)
set -euo pipefail
rb=${1:?usage: predict_published.sh ROCEBENCH [TABLE...]}
shift
tables=("$@")
if [[ ${#tables[@]} == 0 ]]; then
  for f in "$(dirname "$0")"/../published/*.json; do
    [[ $f == *.schema.json ]] || tables+=("$(basename "$f" .json)")
  done
fi
for t in "${tables[@]}"; do
  "$rb" predict --published "$t"
  echo
done
