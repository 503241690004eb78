#!/usr/bin/env bash
# `rocebench accept` refuses, before any rank starts, what would let an acceptance pass on evidence
# it never gathered: a hostfile naming one host twice (by one name, or by two names of this host).
# Each refusal is exit 2 naming what the user typed.
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

echo "ok: every refusal came before anything started"
