#!/usr/bin/env bash
# CTest: `rocebench accept` on 8 emulated hosts names exactly the broken ones. Host 5's link runs at
# half the others' rate, host 3's netcheck reads a saved tree with PFC on the wrong priority, and
# host 7 is gone before the run starts (its namespace deleted). Expected: host 3 CONFIG, host 5 LINK
# and SLOW (by bisection), host 7 UNREACHABLE, every other host PASS, exit 1; the training stage
# gives each reachable node its images/s within 30 s. `report --accept` judges its records again: the
# same table and exit code. With --slurm-drain --dry-run it prints the scontrol command that drains
# each failed node, and only those, with its reason.
# The rates (200 and 100 Mbit/s) keep 8 ranks' ring within what 2 vCPUs forward (~1 Gbit/s in all).
# Exit 77 (skipped) without root or network namespaces.
set -uo pipefail
rocebench=$1
bed=$2
fixture=$3
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbac

hosts=$("$bed" up 8 --prefix "$prefix" --subnet 10.79.6 --rate 200mbit --rate-of 5=100mbit) || { echo "FAIL: bring-up"; exit 1; }
cp -r "$fixture" "$work/host3"
for f in "$work"/host3/capture/dcb-pfc-*.txt; do sed -i 's/3:on 4:off/3:off 4:on/' "$f"; done
grep -q '4:on' "$work"/host3/capture/dcb-pfc-ens1f0np0.txt || { echo "FAIL: the fixture's PFC line was not changed"; exit 1; }
ip netns delete "${prefix}7"

start=$SECONDS
"$rocebench" accept --netns "$hosts" --netcheck-tree "${prefix}3=$work/host3" --results-dir "$work/out" --deadline 20 \
  --slurm-drain --slurm-resume --dry-run >"$work/accept.out" 2>"$work/accept.err"
rc=$?
took=$((SECONDS - start))
sed -n "/^host /,\$p" "$work/accept.out"; [ "$rc" = 1 ] || tail -n 20 "$work/accept.out" "$work/accept.err"
echo "took ${took} s"
# Judged again from its records alone, under the profile it ran under: the same table and exit code.
"$rocebench" report --accept "$work/out" >"$work/rejudge.out" 2>&1
rejudge_rc=$?
sed -n '/^host /,/^cluster: /p' "$work/accept.out" >"$work/accept.table"
sed -n '/^host /,/^cluster: /p' "$work/rejudge.out" >"$work/rejudge.table"
diff "$work/accept.table" "$work/rejudge.table" && [ -s "$work/accept.table" ] && [ "$rejudge_rc" = "$rc" ]
rejudged=$?

/usr/bin/python3 - "$work/out" "$prefix" "$rc" "$took" "$rejudged" <<'PY'
import json, sys, xml.etree.ElementTree as ET
out, prefix, rc, took, rejudged = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
failures = 0
def check(what, ok):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1
check(f"exit 1, the cluster fails (got {rc})", rc == 1)
check("report --accept judges the records again: the same table and exit code", rejudged == 0)
check(f"within 5 minutes (took {took} s)", took <= 300)
verdict = json.load(open(f"{out}/accept.json"))
codes = {n["host"]: sorted({f["code"] for f in n["findings"]}) for n in verdict["nodes"]}
expected = {f"{prefix}{i}": [] for i in range(8)}
expected[f"{prefix}3"] = ["CONFIG"]
expected[f"{prefix}5"] = ["LINK", "SLOW"]
expected[f"{prefix}7"] = ["UNREACHABLE"]
for host in sorted(expected):
    check(f"{host}: {expected[host] or 'PASS'} (got {codes.get(host)})", codes.get(host) == expected[host])
check("no cluster-wide finding", verdict["cluster_findings"] == [])
config = [f for n in verdict["nodes"] for f in n["findings"] if f["code"] == "CONFIG"]
check("the CONFIG evidence names the PFC check", bool(config) and "roce.pfc.enabled_priorities" in config[0]["evidence"])
suites = {s.get("name"): s for s in ET.parse(f"{out}/junit.xml").getroot()}
check("JUnit: one suite per host", sorted(suites) == sorted(f"rocebench.host.{h}" for h in expected))
check("JUnit: the failing hosts' suites have failures, the others none",
      all((int(suites[f"rocebench.host.{h}"].get("failures")) > 0) == bool(expected[h]) for h in expected))
reachable = [h for h in sorted(expected) if h != f"{prefix}7"]
train = {n["host"]: n["stages"].get("train", "") for n in verdict["nodes"]}
check(f"the training stage gave every reachable node its images/s (got {train})", all(train[h].startswith("ok (") for h in reachable))
import glob, os
# From the stage's plan, written before its ranks start, to its last record.
runs = sorted(glob.glob(f"{out}/stages/*-train"))
took_train = os.stat(f"{runs[-1]}/results.jsonl").st_mtime - os.stat(f"{runs[-1]}/stage-plan.json").st_mtime if runs else -1
check(f"the training stage ran once, within 30 s (took {took_train:.1f} s, {len(runs)} run(s))", len(runs) == 1 and 0 <= took_train <= 30)
# --slurm-drain --dry-run: one scontrol drain per failed node, its reason prefixed "rocebench CODE:".
import re, shlex
printed = open(f"{out}/../accept.out").read().splitlines()
drains = {}
for line in printed:
    if line.startswith("scontrol update "):
        words = dict(w.split("=", 1) for w in shlex.split(line)[2:])
        drains[words["nodename"]] = (words["state"], words["reason"])
want = {h: codes_[0] for h, codes_ in expected.items() if codes_}
check(f"--dry-run drains exactly the failed nodes (got {sorted(drains)})", sorted(drains) == sorted(want))
check("each drain's reason is 'rocebench CODE: evidence', at most 128 characters",
      all(st == "drain" and r.startswith(f"rocebench {want[h]}: ") and len(r) <= 128 for h, (st, r) in drains.items()))
check("without a Slurm controller it says the commands assume no node is drained",
      any(re.match(r"slurm: sinfo .*: the commands below assume no node is drained now", l) for l in printed))
saved = sorted(os.listdir(f"{out}/captures")) if os.path.isdir(f"{out}/captures") else []
check(f"every reachable node saved what netcheck read (got {saved})", saved == sorted(h for h in expected if h != f"{prefix}7"))
sys.exit(1 if failures else 0)
PY
