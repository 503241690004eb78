#!/usr/bin/env bash
# CTest: `rocebench accept --quick`, the health check between jobs, on 4 emulated hosts (200 Mbit/s
# links, host 2's at 50 Mbit/s). It measures each host with its two ring neighbours only (4 pairs,
# not the matrix's 6), runs no allreduce and no training, and still names host 2, and only it, LINK;
# exit 1, within its time limit. `report --accept` judges the records again: the same table, exit 1.
# Exit 77 (skipped) without root or network namespaces.
#   usage: test_accept_quick_netns.sh ROCEBENCH NETNS_SH
set -uo pipefail
rb=$1
bed=$2
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbqk
bed_work=$work
source "$(dirname "$0")/../../ci/cli_test_lib.sh"
trap '"$bed" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$work" "$bed_work"' EXIT

hosts=$("$bed" up 4 --prefix "$prefix" --subnet 10.79.8 --rate 200mbit --rate-of 2=50mbit) || fail "bring-up"
table() { sed -n '/^host /,/^cluster: /p' "$1"; }
limit_s=120  # what a health check between jobs may take here: 2 vCPUs forward every link, under CI load

start=$SECONDS
expect_rc 1 "$rb" accept --quick --netns "$hosts" --results-dir "$work/acc"
took=$((SECONDS - start))
echo "accept --quick took $took s"
((took <= limit_s)) || fail "accept --quick took $took s, over $limit_s s"
expect_out "^accept --quick: 4 node\\(s\\)"
expect_out "the quick check took [0-9.]+ s$"
table "$work/out" >"$work/quick.table"
head -n 1 "$work/quick.table" | grep -q allreduce && fail "a quick check ran the allreduce stage"
head -n 1 "$work/quick.table" | grep -q train && fail "a quick check ran the training stage"
pairs=$(/usr/bin/python3 -c '
import json, sys
pairs = set()
for line in open(sys.argv[1]):
    r = json.loads(line)
    p = r.get("params", {})
    if r.get("step") == "microbench.allpairs" and r.get("kind") == "result" and "src" in p:
        pairs.add(frozenset((p["src"], p["dst"])))
print(len(pairs))' "$work"/acc/stages/02-links/results.jsonl)
[[ $pairs == 4 ]] || fail "the links stage measured $pairs pairs, not the ring's 4"
/usr/bin/python3 - "$work/acc/accept.json" "$prefix" <<'PY' || fail "the verdict"
import json, sys
verdict, prefix = json.load(open(sys.argv[1])), sys.argv[2]
codes = {n["host"]: sorted({f["code"] for f in n["findings"]}) for n in verdict["nodes"]}
want = {f"{prefix}{i}": (["LINK"] if i == 2 else []) for i in range(4)}
print("codes:", codes)
sys.exit(codes != want)
PY

expect_rc 1 "$rb" report --accept "$work/acc"
table "$work/out" | diff "$work/quick.table" - || fail "judged again, another table"
echo "ok: accept --quick names the slow host from its neighbours' pairs in $took s"
