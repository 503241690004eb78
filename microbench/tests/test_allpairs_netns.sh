#!/usr/bin/env bash
# CTest: the all-pairs matrix on 8 emulated hosts, host 5 on a 500 Mbit/s link and the others on
# 1 Gbit/s, names host 5 and only host 5. Then on 3 hosts at 200 Mbit/s, host 2's queue at 40 kB
# (its link drops under load, TCP moves ~0.004 Gb/s): the matrix still completes within the ranks'
# 30 s waits (each pair's warm-up lasts no longer than its duration) and names host 2.
# Exit 77 (skipped) without root or network namespaces.
set -uo pipefail
rocebench=$1
bed=$2
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rba

hosts=$("$bed" up 8 --prefix "$prefix" --subnet 10.79.5 --rate 1gbit --rate-of 5=500mbit) || { echo "FAIL: bring-up"; exit 1; }
cat >"$work/plan.json" <<'JSON'
{"name": "allpairs-netns", "steps": [
  {"step": "microbench.allpairs", "params": {"transport": "tcp", "test": "bw", "bytes": 131072, "duration_s": 1.0}}]}
JSON
"$rocebench" run "$work/plan.json" --netns "$hosts" --ranks 8 --results-dir "$work/out" --deadline 30 \
  >"$work/run.out" 2>"$work/run.err"
rc=$?
# Exit 1: the run finished and a pair failed its threshold, which is what host 5 must cause.
[ "$rc" = 1 ] || { echo "FAIL: the run exited $rc, expected 1 (a slow pair)"; cat "$work/run.err"; exit 1; }

/usr/bin/python3 - "$work/out/results.jsonl" "${prefix}5" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
pairs = [r for r in records if r.get("step") == "microbench.allpairs" and not r["params"].get("summary")]
summary = [r for r in records if r.get("step") == "microbench.allpairs" and r["params"].get("summary")]
bad = sys.argv[2]
failures = 0
def check(what, ok):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1
check(f"28 pair records (got {len(pairs)})", len(pairs) == 28)
for r in sorted(pairs, key=lambda r: (r["params"]["src"], r["params"]["dst"])):
    print(f'  {r["params"]["src"]} -> {r["params"]["dst"]}: {r["metrics"]["bw_avg_Gbps"]:.3f} Gb/s {r["status"]}')
slow = [r for r in pairs if bad in (r["params"]["src"], r["params"]["dst"])]
check(f"every pair with {bad} fails", len(slow) == 7 and all(r["status"] == "fail" for r in slow))
# On 2 shared vCPUs a healthy pair can also stay slow on its retest (seen once in CI: 1 of 21); it
# may be listed as a bad pair, but it must never make a healthy host count as bad (checked below).
others_failed = [r for r in pairs if r not in slow and r["status"] != "ok"]
check(f"at most one pair without {bad} fails (got {len(others_failed)})", len(others_failed) <= 1)
check("one summary record", len(summary) == 1)
if summary:
    s = summary[0]
    print("  summary:", s["status"], s.get("reason", ""))
    check(f"the summary names {bad} and only it", s["status"] == "fail" and s["params"]["bad_hosts"] == [bad])
sys.exit(1 if failures else 0)
PY
[ $? = 0 ] || exit 1

"$bed" down --prefix "$prefix" >/dev/null
hosts=$("$bed" up 3 --prefix "$prefix" --subnet 10.79.5 --rate 200mbit) || { echo "FAIL: bring-up of 3 hosts"; exit 1; }
source "$(dirname "$bed")/../link.sh"
ip netns exec "${prefix}2" tc qdisc replace dev eth0 root handle 1: tbf rate 200mbit burst "$link_burst" limit 40kb || exit 1
tc qdisc replace dev "${prefix}2h" root handle 1: tbf rate 200mbit burst "$link_burst" limit 40kb || exit 1
start=$(date +%s)
"$rocebench" run "$work/plan.json" --netns "$hosts" --ranks 3 --results-dir "$work/lossy" --deadline 30 >"$work/lossy.out" 2>&1
rc=$?
echo "3 hosts, host 2's queue 40 kB: exit $rc in $(($(date +%s) - start)) s"
grep -E "^ +all pairs|bad hosts" "$work/lossy.out"
[ "$rc" = 1 ] || { echo "FAIL: the run exited $rc, not 1 (the matrix completes and fails host 2's pairs)"; tail -20 "$work/lossy.out"; exit 1; }
grep -q "bad hosts: ${prefix}2$" "$work/lossy.out" || { echo "FAIL: the summary does not name ${prefix}2 alone"; exit 1; }
echo "ok: the matrix completes over a dropping link and names ${prefix}2"
# Each failed pair's line names its pair (the record is rank 0's); the report's matrix cell does not repeat it.
[ "$(grep -cE "^  fail microbench.allpairs .*: ${prefix}[0-2] -> ${prefix}[0-2]: 0\.[0-9]+ Gb/s is below" "$work/lossy.out")" = 2 ] ||
  { echo "FAIL: the two failed pairs' lines do not name their pairs"; grep "^  fail" "$work/lossy.out"; exit 1; }
! grep -q " ✗ ${prefix}" "$work/lossy/report/report.md" || { echo "FAIL: a matrix cell repeats its pair"; exit 1; }
echo "ok: each failed pair's line names the pair"
