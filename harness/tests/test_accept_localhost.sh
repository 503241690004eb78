#!/usr/bin/env bash
# `rocebench accept --launcher mpirun` with a hostfile naming this host `localhost`: its ranks record
# this host's own name, which the verdict matches to the node, so every stage has evidence of it (the
# training figure, the GPU stage's skip or figures) and the one-node cluster passes, exit 0.
# Exit 77 (skipped) without Open MPI's mpirun.
#   usage: test_accept_localhost.sh ROCEBENCH
set -uo pipefail
rb=$1
source "$(dirname "$0")/../../ci/cli_test_lib.sh"
command -v mpirun >/dev/null || { echo "SKIP: no mpirun (Open MPI) on this host"; exit 77; }
here=$(hostname)

printf 'localhost slots=1\n' >"$work/hosts"
expect_rc 0 "$rb" accept --hostfile "$work/hosts" --launcher mpirun --results-dir "$work/acc" --deadline 20
expect_out "^accept: localhost is this host: its row is $here"
expect_out "^cluster: PASS, all 1 nodes pass"
python3 - "$work/acc/accept.json" "$here" <<'PY' || fail "the verdict lacks evidence of this host"
import json, sys
verdict = json.load(open(sys.argv[1]))
[node] = verdict["nodes"]
print("stages:", verdict["stages"], "cells:", node["stages"])
assert node["host"] == sys.argv[2], node["host"]
assert verdict["stages"] == ["hosts", "netcheck", "gpu", "train"], verdict["stages"]
assert node["stages"]["train"].startswith("ok ("), node["stages"]["train"]
assert node["stages"]["gpu"].startswith(("ok (", "skip (")), node["stages"]["gpu"]
PY
echo "ok: localhost is this host, with evidence from every stage"
