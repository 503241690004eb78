#!/usr/bin/env bash
# `rocebench accept` and `rocebench run` refuse, before any rank starts, what would let an acceptance
# pass on evidence it never gathered: a hostfile naming one host twice (by one name, or by two names
# of this host), and a results folder an earlier run already holds (--run-id, --results-dir), whose
# records would mix with the new run's. Each refusal is exit 2 naming what the user typed.
#   usage: test_accept_cli.sh ROCEBENCH
set -euo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"
here=$(hostname)

# One host on two lines: the second row would pass with no record of its own.
printf '# two lines, one host\n%s slots=1\n\n%s slots=1\n' "$here" "$here" >"$work/twice"
expect_rc 2 "$rb" accept --hostfile "$work/twice" --results-dir "$work/twice-out" --deadline 5
expect_out "^rocebench accept: $work/twice:4: field 'host': '$here' is already on line 2: each line is one node"
[[ ! -e $work/twice-out ]] || fail "a refused acceptance made its results folder"

# This host under two of its names: its ranks' records carry one name for both lines.
printf 'localhost slots=1\n%s slots=1\n' "$here" >"$work/aliases"
expect_rc 2 "$rb" accept --hostfile "$work/aliases" --results-dir "$work/aliases-out" --deadline 5
expect_out "$work/aliases:2: field 'host': '$here' is the same host as 'localhost' on line 1 \\($here\\)"
printf '127.0.0.1 slots=1\nlocalhost slots=1\n' >"$work/loopback"
expect_rc 2 "$rb" accept --hostfile "$work/loopback" --results-dir "$work/loopback-out" --deadline 5
expect_out "$work/loopback:2: field 'host': 'localhost' is the same host as '127.0.0.1' on line 1 \\($here\\)"

# An earlier acceptance's folder, by run id and by folder: refused before mpirun, and left as it was.
printf 'localhost slots=1\n' >"$work/one"
mkdir -p "$work/res/night1"
echo '{"cluster": "PASS"}' >"$work/res/night1/accept.json"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results "$work/res" --run-id night1 --deadline 5
expect_out "^rocebench accept: --run-id 'night1': the results folder $work/res/night1 already exists and is not empty"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/res/night1" --deadline 5
expect_out "^rocebench accept: --results-dir '$work/res/night1': the results folder .* already exists"
[[ $(ls "$work/res/night1") == accept.json && $(cat "$work/res/night1/accept.json") == '{"cluster": "PASS"}' ]] ||
  fail "the earlier acceptance's folder was changed: $(ls "$work/res/night1")"
mkdir "$work/res/empty"
expect_rc 2 "$rb" accept --hostfile "$work/twice" --results "$work/res" --run-id empty --deadline 5
expect_out "is already on line 2"  # an empty folder holds nothing to mix: the next check speaks

# `rocebench run --run-id` twice: the second is refused, the first run's records are left as they were.
cat >"$work/plan.json" <<'JSON'
{"name": "tiny", "launcher": {"type": "local", "ranks": 1}, "steps": [{"step": "harness.rendezvous", "params": {"rounds": 1}}]}
JSON
expect_rc 0 "$rb" run "$work/plan.json" --results "$work/res" --run-id r1
before=$(sha256sum "$work/res/r1/results.jsonl")
expect_rc 2 "$rb" run "$work/plan.json" --results "$work/res" --run-id r1
expect_out "^rocebench run: --run-id 'r1': the results folder $work/res/r1 already exists and is not empty"
[[ $(sha256sum "$work/res/r1/results.jsonl") == "$before" ]] || fail "the first run's records were changed"

# Where the verdict also goes (issue 44): a file that cannot be written, a validity out of range.
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/k8s-out" --k8s "$work/no/such/dir/k8s.yaml"
expect_out "^--k8s $work/no/such/dir/k8s.yaml: cannot write"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/k8s-out" --k8s-commands "$work/no/k8s.sh"
expect_out "^--k8s-commands $work/no/k8s.sh: cannot write"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/k8s-out" --metrics "$work/no/m.prom"
expect_out "^--metrics $work/no/m.prom: cannot write"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/k8s-out" --valid-hours 0
expect_out "--valid-hours: 0 is out of range"
expect_rc 2 "$rb" accept --hostfile "$work/one" --results-dir "$work/k8s-out" --dry-run
expect_out "^rocebench accept: --dry-run applies to --slurm-drain and --slurm-resume"
[[ ! -e $work/k8s-out ]] || fail "a refused acceptance made its results folder"
echo "ok: every refusal came before anything started"
