#!/usr/bin/env bash
# The targets of `rocebench history check` (#24), measured on this machine's own noise. A benchmark,
# not a CI test (a few minutes, most of it the recorded runs and the year-long history).
#   usage: history_check.sh BUILD_DIR [RUNS=30] [WORK=/tmp/rb-history-bench]
# 1. Records RUNS runs of one build (`rocebench allreduce`, 1K..1M, 2 ranks) unless WORK already holds
#    them, and adds them to WORK/aa.sqlite.
# 2. rb_history_bench noise: per series, its run-to-run residuals resampled into 60-night histories:
#    A/A false alarms per night (target <= 1%) and a 5% step flagged within 3 nights (target >= 95%
#    for CV <= 2%), for the noise as measured, rescaled to CV 1% and 2%, and Gaussian for reference.
# 3. compare of A/A pairs of the recorded runs, alone and with --db (the history of the first 20):
#    pairs flagged (target: none in >= 19 of 20).
# 4. rb_history_bench speed: 2,000 series x 365 nights added, then checked (target < 5 s).
set -euo pipefail
build=$(realpath "$1") runs=${2:-30} work=${3:-/tmp/rb-history-bench}
rb=$build/harness/rocebench bench=$build/reports/rb_history_bench
mkdir -p "$work/aa"
for i in $(seq -w 1 "$runs"); do
  [[ -s $work/aa/r$i/results.jsonl ]] || "$rb" allreduce --ranks 2 -b 1K -e 1M --results-dir "$work/aa/r$i" >/dev/null
done
rm -f "$work/aa.sqlite" "$work/aa20.sqlite"
"$rb" history add --db "$work/aa.sqlite" "$work"/aa/r*/results.jsonl
mapfile -t files < <(ls "$work"/aa/r*/results.jsonl)
"$rb" history add --db "$work/aa20.sqlite" "${files[@]:0:20}"

echo "== history check on resampled nights: all $runs runs"
"$bench" noise "$work/aa.sqlite"
echo "== history check on resampled nights: the first 20 runs"
"$bench" noise "$work/aa20.sqlite"

echo "== compare of A/A pairs among runs 21.. (20 pairs)"
alone=0 withdb=0 pairs=0
for ((i = 20; i < ${#files[@]} && pairs < 20; i++)); do
  for ((j = i + 1; j < ${#files[@]} && pairs < 20; j++)); do
    pairs=$((pairs + 1))
    "$rb" compare "${files[i]}" "${files[j]}" >/dev/null || alone=$((alone + 1))
    "$rb" compare --db "$work/aa20.sqlite" "${files[i]}" "${files[j]}" >/dev/null || withdb=$((withdb + 1))
  done
done
echo "pairs flagged (exit 1): $alone of $pairs alone, $withdb of $pairs with --db"

echo "== speed: a year of nights for 2,000 series"
rm -rf "$work/speed"
"$bench" speed "$work/speed" 2000 365
start=$(date +%s.%N)
"$rb" history check --db "$work/speed/history.sqlite" >/dev/null || true
echo "rocebench history check (the binary, end to end): $(echo "$(date +%s.%N) - $start" | bc) s wall"
