#!/usr/bin/env bash
# CTest: `rocebench report --accept RUN` judges a finished acceptance again from its records alone.
# `accept` on 3 emulated hosts (200 Mbit/s links, all healthy) passes; judged again under the profile
# it ran under, the same host x stage table and exit code; under a JSON profile rating the links at
# 1 Gb/s, no allreduce reaches 0.85 of it: the search would retry the whole group, a run this
# acceptance never made, so every node is UNVERIFIED with that reason (never a guess), exit 1.
# Both write the same Kubernetes manifest and commands (--k8s, --k8s-commands), valid YAML with valid
# labels, and the same Prometheus metrics (--metrics, checked by promtool); under the rated profile
# every node is tainted and its metrics say why, its reason shortened to a valid label value.
# With a profile asking lossless under load, the incast stage runs after the links and passes every node;
# re-judged under a verbs profile, the tcp links and allreduce are UNVERIFIED, naming both transports.
# A folder that is not an acceptance and a profile that does not exist: exit 2 naming the flag.
# Exit 77 (skipped) without root or network namespaces.
#   usage: test_accept_rejudge_netns.sh ROCEBENCH NETNS_SH
set -uo pipefail
rb=$1
bed=$2
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbrj
bed_work=$work                                      # the bed's state folder
source "$(dirname "$0")/../../ci/cli_test_lib.sh"  # expect_rc, expect_out, a $work of its own
trap '"$bed" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$work" "$bed_work"' EXIT

command -v promtool >/dev/null || fail "no promtool: ci/setup.sh installs it (Debian package prometheus)"
hosts=$("$bed" up 3 --prefix "$prefix" --subnet 10.79.7 --rate 200mbit) || fail "bring-up"
table() { sed -n '/^host /,/^cluster: /p' "$1"; }

expect_rc 0 "$rb" accept --netns "$hosts" --results-dir "$work/acc" --deadline 20 --k8s "$work/accept.k8s.yaml" \
  --k8s-commands "$work/accept.k8s.sh" --metrics "$work/accept.prom"
expect_out "^prometheus: each node's verdict and figures in $work/accept.prom"
promtool check metrics <"$work/accept.prom" || fail "promtool refused accept's metrics"
for m in pass pair_Gbps allreduce_busbw_Gbps train_images_per_second time_seconds valid_until_seconds; do
  [[ $(grep -c "^rocebench_accept_$m{node=" "$work/accept.prom") == 3 ]] || fail "not 3 series of rocebench_accept_$m"
done
expect_out "^kubernetes: labels and taints in $work/accept.k8s.yaml \\(kubectl apply -f"
check_k8s=$(dirname "$0")/../../reports/tests/check_k8s_manifest.py
nodes=$(/usr/bin/python3 -c 'import json, sys; print(" ".join(n["host"].lower() for n in json.load(open(sys.argv[1]))["nodes"]))' "$work/acc/accept.json")
verdicts() { for n in $nodes; do printf '%s=%s ' "$n" "$1"; done; }
# shellcheck disable=SC2046
/usr/bin/python3 "$check_k8s" "$work/accept.k8s.yaml" $(verdicts pass) || fail "accept's Kubernetes manifest"
[[ $(grep -c '^kubectl label node --overwrite .* rocebench.io/accept=pass ' "$work/accept.k8s.sh") == 3 ]] || fail "not 3 kubectl label lines"
table "$work/out" >"$work/accept.table"
[[ -s $work/accept.table ]] || fail "accept printed no table"
[[ -f $work/acc/accept.jsonl ]] || fail "accept recorded no accept.jsonl"

expect_rc 0 "$rb" report --accept "$work/acc"
expect_out "under profile builtin:auto \\(the one it ran under\\)"
table "$work/out" >"$work/same.table"
diff "$work/accept.table" "$work/same.table" || fail "the same profile gave another table"
expect_rc 0 "$rb" report --accept "$work/acc" --profile auto --k8s "$work/again.k8s.yaml" --k8s-commands "$work/again.k8s.sh" \
  --metrics "$work/again.prom"
cmp "$work/accept.prom" "$work/again.prom" || fail "report --accept --metrics wrote other metrics than accept --metrics"
table "$work/out" | diff "$work/accept.table" - || fail "--profile auto gave another table"
cmp "$work/accept.k8s.yaml" "$work/again.k8s.yaml" || fail "report --accept --k8s wrote another manifest than accept --k8s"
cmp "$work/accept.k8s.sh" "$work/again.k8s.sh" || fail "report --accept --k8s-commands wrote other commands than accept"

cat >"$work/rated.json" <<'JSON'
{"name": "rated-1g", "allreduce": {"rated_link_Gbps": 1, "busbw_fraction_of_rated": 0.85}}
JSON
expect_rc 1 "$rb" report --accept "$work/acc" --profile "$work/rated.json"
expect_out "^cluster: FAIL, 3 of 3 nodes fail"
[[ $(grep -c "UNVERIFIED (allreduce): against 0.850 Gb/s .* needs a run this acceptance did not make: allreduce-retry on" "$work/out") == 3 ]] ||
  fail "not every node is UNVERIFIED for the retry that was never made"
# Every node fails with a long reason: tainted, the reason shortened to a valid label value.
expect_rc 1 "$rb" report --accept "$work/acc" --profile "$work/rated.json" --k8s "$work/rated.k8s.yaml" --valid-hours 2 \
  --metrics "$work/rated.prom"
promtool check metrics <"$work/rated.prom" || fail "promtool refused the failing run's metrics"
[[ $(grep -c '^rocebench_accept_pass{.*} 0$' "$work/rated.prom") == 3 && $(grep -c '^rocebench_accept_reason{.*code="UNVERIFIED",stage="allreduce"' "$work/rated.prom") == 3 ]] ||
  fail "the failing run's metrics do not say every node fails UNVERIFIED"
# shellcheck disable=SC2046
/usr/bin/python3 "$check_k8s" "$work/rated.k8s.yaml" $(verdicts fail) || fail "the failing manifest"
[[ $(grep -c '"rocebench.io/accept-reason": "UNVERIFIED_against_0.850_Gb_s_' "$work/rated.k8s.yaml") == 3 ]] || fail "no shortened reason"
grep -q "valid for 2 h" "$work/rated.k8s.yaml" || fail "--valid-hours 2 not written"
# A profile that asks lossless under load adds the incast stage after the links: on healthy links no node
# is LOSSY (a stalled receiver would only warn), and the records judge again to the same table.
echo '{"name": "tcp-lossless", "lossless": {"duration_s": 0.5}}' >"$work/lossless.json"
expect_rc 0 "$rb" accept --netns "$hosts" --profile "$work/lossless.json" --results-dir "$work/lossless" --deadline 20
table "$work/out" >"$work/lossless.table"
grep -q "^host .* links  *lossless  *allreduce" "$work/lossless.table" || fail "no lossless column after links"
[[ $(grep -cE "^${prefix}[0-9] .* (ok \(no loss\)|ok \(ECN marked, no loss\)|warn CONGESTED) " "$work/lossless.table") == 3 ]] ||
  fail "not every node's lossless cell is ok or a warning"
[[ -f $work/lossless/stages/03-lossless/results.jsonl ]] || fail "the incast's records are not in stages/03-lossless"
expect_rc 0 "$rb" report --accept "$work/lossless"
table "$work/out" | diff "$work/lossless.table" - || fail "the lossless acceptance judged again gave another table"
# The links and allreduce ran over tcp: a verbs profile finds no evidence in them, and says so.
echo '{"name": "over-verbs", "transport": "verbs"}' >"$work/verbs.json"
expect_rc 1 "$rb" report --accept "$work/acc" --profile "$work/verbs.json"
expect_out "under profile $work/verbs.json \\(accepting over verbs\\)"
[[ $(grep -c "UNVERIFIED (links): the link matrix was measured over tcp, and profile $work/verbs.json accepts over verbs" "$work/out") == 3 ]] ||
  fail "not every node's links are UNVERIFIED under a verbs profile"
expect_rc 2 "$rb" report --accept "$work/acc" --k8s "$work/no/such/k8s.yaml"
expect_out "^--k8s $work/no/such/k8s.yaml: cannot write"
expect_rc 2 "$rb" report "$work/acc/stages" --k8s "$work/k.yaml"
expect_out "--k8s, --k8s-commands and --metrics apply to --accept RUN"

expect_rc 2 "$rb" report --accept "$work/acc/stages"
expect_out "^rocebench report: --accept '$work/acc/stages': not an acceptance's folder: it has no accept.jsonl"
expect_rc 2 "$rb" report --accept "$work/acc" --profile "$work/none.json"
expect_out "^rocebench report: --profile: profile '$work/none.json' is neither built in"
echo '{"allreduce": {"rated": 1}}' >"$work/bad.json"
expect_rc 2 "$rb" report --accept "$work/acc" --profile "$work/bad.json"
expect_out "^rocebench report: --profile: $work/bad.json:1: field 'allreduce.rated'"
expect_rc 2 "$rb" report "$work/acc/stages" --profile auto
expect_out "--profile applies to --accept RUN"
echo "ok: the acceptance judged again from its records: the same verdict under its profile, the other profile's under another"
