#!/usr/bin/env bash
# Fuzzes every parser of user input with libFuzzer (clang; ASan and UBSan): the plan and the hostfile,
# results files (the common reader and the reports dataset), the importers, netcheck's parsers and
# profile, the rendezvous wire protocol, the replay engine's timeline, the history database, and predict's
# fabric and published-table files.
# Builds the `fuzz` preset into build-fuzz/, seeds each target with the tests' own inputs, runs each
# for SECONDS, and prints executions per second and crashes. A crash leaves its input in build-fuzz/artifacts/ and fails the run.
#   ci/fuzz.sh [--seconds N | --ci] [--only TARGET]   (the closing benchmark: --seconds 600)
# --ci: what CTest runs: a fixed seed and a fixed number of inputs per target (about 10 s each here) from
# an empty corpus, so that runs follow nearly the same path (two runs here kept corpora within 2%) and
# do not depend on the machine's speed. A crash is always a bug, whoever finds it.
# Without clang or libFuzzer: skipped (77), and failed under CI (ci/testbeds/unavailable.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/ci/testbeds/unavailable.sh"
seconds=20 only="" ci=0
declare -A ci_runs=([plan]=90000 [hostfile]=200000 [records]=600 [importers]=48000 [netcheck]=18000 [wire]=290000
                   [timeline]=10000 [history]=1500 [predict]=20000)
while [[ $# -gt 0 ]]; do
  case $1 in
    --seconds) seconds=$2; shift 2 ;;
    --ci) ci=1; shift ;;
    --only) only=$2; shift 2 ;;
    *) echo "ci/fuzz.sh: unknown argument '$1' (--seconds N, --only TARGET)" >&2; exit 2 ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "ci/fuzz.sh: --seconds takes a whole number of seconds, not '$seconds'" >&2; exit 2; }
command -v clang++ >/dev/null || testbed_unavailable "clang++ is not installed (ci/setup.sh installs clang)"
ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
  testbed_unavailable "libFuzzer is not installed (ci/setup.sh installs libclang-rt-14-dev)"

cd "$root"
cmake --preset fuzz >build-fuzz.log 2>&1 && cmake --build --preset fuzz >>build-fuzz.log 2>&1 ||
  { tail -30 build-fuzz.log; echo "FAIL: the fuzz targets do not build (build-fuzz.log)"; exit 1; }
rm -f build-fuzz.log

# Seeds: the inputs the unit tests read, a few written here, and fuzz/seeds/TARGET/ (a sample of
# results, and every input a fuzzer crashed on once, so that CI replays it under the sanitizers).
seeds=build-fuzz/seeds
rm -rf "$seeds" && mkdir -p "$seeds"/{plan,hostfile,records,importers,netcheck,wire,timeline,history,predict}
cp harness/plans/*.json ci/gpu/one_gpu.json "$seeds/plan/"
printf 'node1 slots=8\nnode2   slots=4 max_slots=4  # comment\n\n10.0.0.7\nfe80::1 slots=2\n' >"$seeds/hostfile/hosts"
cp models/timelines/*.jsonl "$seeds/records/"
cp models/timelines/*.jsonl "$seeds/timeline/"
cp models/fabrics/*-roce.json models/published/*[0-9].json "$seeds/predict/"
# A small history of two runs, kept as SQL text (a reviewable diff), written as the SQLite file it seeds.
if command -v sqlite3 >/dev/null; then sqlite3 "$seeds/history/two-runs.sqlite" <fuzz/history_seed.sql; fi
for dir in fuzz/seeds/*/; do cp "$dir"* "$seeds/$(basename "$dir")/"; done
cp reports/tests/data/* "$seeds/importers/"
cp netcheck/tests/fixtures/mlx5-good/capture/* netcheck/profiles/lossless-roce.json "$seeds/netcheck/"
python3 - "$seeds/wire" <<'PY'
import json, struct, sys
for i, m in enumerate([{"op": "hello", "token": "t", "rank": 0, "world": 2, "host": "h0"},
                       {"op": "set", "key": "k", "value": "v"}, {"op": "barrier", "name": "start"}]):
    body = json.dumps(m).encode()
    open(f"{sys.argv[1]}/frame{i}", "wb").write(struct.pack(">I", len(body)) + body)
PY

mkdir -p build-fuzz/artifacts
[[ $ci == 0 ]] || rm -rf build-fuzz/corpus  # the same start on every machine
failures=0
for target in plan hostfile records importers netcheck wire timeline history predict; do
  [[ -z $only || $only == "$target" || $only == "fuzz_$target" ]] || continue
  corpus=build-fuzz/corpus/$target
  mkdir -p "$corpus"
  log=build-fuzz/fuzz_$target.log
  if [[ $ci == 1 ]]; then length=(-seed=1 -runs="${ci_runs[$target]}"); else length=(-max_total_time="$seconds"); fi
  build-fuzz/fuzz/fuzz_$target "${length[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix=build-fuzz/artifacts/"$target"- "$corpus" "$seeds/$target" >"$log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  if [[ $rc == 0 ]]; then
    echo "ok    fuzz_$target: ${runs:-?} inputs (${speed:-?}/s), corpus $(ls "$corpus" | wc -l), 0 crashes"
  else
    failures=$((failures + 1))
    echo "FAIL  fuzz_$target (exit $rc) after ${runs:-?} inputs: $(grep -m1 -E 'ERROR|runtime error|deadly signal' "$log")"
    grep -E -A12 'ERROR: |runtime error' "$log" | head -30
    echo "      the input: $(ls build-fuzz/artifacts/"$target"-* 2>/dev/null | head -1)"
  fi
done
echo "== $failures target(s) crashed"
# The unit tests of the modules built here, built beside the targets with the same sanitizers.
sanitized=0
[[ $ci == 0 ]] || "$root/ci/sanitize.sh" --tests-in build-fuzz common transport microbench collectives models netcheck reports harness ||
  sanitized=1
[[ $failures == 0 && $sanitized == 0 ]]
