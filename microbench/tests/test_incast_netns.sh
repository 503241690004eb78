#!/usr/bin/env bash
# CTest: `rocebench probe tcp incast` on 4 emulated hosts with 500 Mbit/s links: every host receives
# once from the other 3; each turn's record has goodput near the shaped link (0.6-1.05 of it: goodput
# counts what the receiver acknowledged, so it cannot beat the link), the 3 senders' goodputs, Jain's
# fairness, p1 <= p50 of the 100 ms intervals; every host has its kernel TCP counter deltas for every
# turn, with the traffic it sent or received in them. The same records judged against half the link
# must fail. verbs, with no RDMA device here, is one skip with each host's reason. Then the bad input
# that must exit 2 naming its flag. ~25 s. Exit 77 (skipped) without root or network namespaces.
set -uo pipefail
rocebench=$1
bed=$2
source "$(dirname "$bed")/testlib.sh"
netns_test_setup rbi

hosts=$("$bed" up 4 --prefix "$prefix" --subnet 10.79.7 --rate 500mbit) || { echo "FAIL: bring-up"; exit 1; }
start=$(date +%s)
"$rocebench" probe tcp incast --netns "$hosts" --ranks 4 --duration 1.5 --size 64K --qps 2 --link-gbps 0.5 \
  --results-dir "$work/out" --deadline 30 >"$work/run.out" 2>"$work/run.err"
rc=$?
echo "incast on 4 hosts: exit $rc in $(($(date +%s) - start)) s"
cat "$work/run.out"
[ "$rc" = 0 ] || { echo "FAIL: the incast exited $rc"; tail -20 "$work/run.err"; exit 1; }

cat >"$work/check.py" <<'PY'
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
prefix = sys.argv[2]
hosts = [f"{prefix}{i}" for i in range(4)]
link = float(sys.argv[3])
incast = [r for r in records if r.get("step") == "microbench.incast"]
turns = [r for r in incast if "role" not in r["params"]]
counters = [r for r in incast if "role" in r["params"]]
failures = 0
def check(what, ok):
    global failures
    print(("ok: " if ok else "FAIL: ") + what)
    failures += 0 if ok else 1
check(f"one record per receiver, each host once (got {sorted(r['params']['receiver'] for r in turns)})",
      sorted(r["params"]["receiver"] for r in turns) == hosts)
for r in turns:
    m, s, who = r["metrics"], r["samples"], r["params"]["receiver"]
    check(f"{who}: status ok ({r['status']} {r.get('reason', '')})", r["status"] == "ok")
    g = m.get("goodput_Gbps", 0)
    check(f"{who}: goodput {g:.3f} Gb/s within 0.6-1.05 of the {link} Gb/s link", 0.6 * link <= g <= 1.05 * link)
    check(f"{who}: link share {m.get('link_share', 0):.3f} = goodput / link",
          abs(m.get("link_share", 0) - g / link) < 1e-9 and m.get("link_Gbps") == 0.5)
    senders = s.get("per_sender_Gbps", {})
    check(f"{who}: the 3 other hosts' goodputs ({senders})",
          sorted(senders) == sorted(set(hosts) - {who}) and abs(sum(senders.values()) - g) < 1e-6)
    check(f"{who}: fairness {m.get('fairness_jain', 0):.3f} >= 0.8", 0.8 <= m.get("fairness_jain", 0) <= 1.0 + 1e-12)
    p1, p50 = m.get("interval_goodput_Gbps_p1", -1), m.get("interval_goodput_Gbps_p50", -1)
    check(f"{who}: 100 ms goodput p1 {p1:.3f} <= p50 {p50:.3f} <= 1.1 x link, from {s.get('n')} intervals",
          0 <= p1 <= p50 <= 1.1 * link and s.get("n", 0) >= 10)
for who in hosts:
    mine = {r["params"]["receiver"]: r for r in counters if r["host"] == who}
    check(f"{who}: counter deltas for every turn ({sorted(mine)})", sorted(mine) == hosts)
    for receiver, r in sorted(mine.items()):
        m = r["metrics"]
        role = "receiver" if receiver == who else "sender"
        # 1.5 s of a share of 500 Mbit/s in 1448-byte segments: thousands of segments either way.
        moved = m.get("tcp_InSegs" if role == "receiver" else "tcp_OutSegs", 0)
        check(f"{who} as {role} of {receiver}: tcp_RetransSegs {m.get('tcp_RetransSegs')}, "
              f"{'InSegs' if role == 'receiver' else 'OutSegs'} {moved}",
              r["params"]["role"] == role and "tcp_RetransSegs" in m and "tcpext_TCPTimeouts" in m and moved > 5000)
sys.exit(1 if failures else 0)
PY
/usr/bin/python3 "$work/check.py" "$work/out/results.jsonl" "$prefix" 0.5 || exit 1
# The same records against a link half as fast must fail (goodput cannot beat the link): the checks can fail.
if /usr/bin/python3 "$work/check.py" "$work/out/results.jsonl" "$prefix" 0.25 >"$work/half.out"; then
  echo "FAIL: the records passed as goodput on a 0.25 Gb/s link"; exit 1
fi
echo "ok: the same records fail against a 0.25 Gb/s link ($(grep -c '^FAIL' "$work/half.out") checks)"

# In a history, and exported for Prometheus, each host's counters stay its own series (counters_of).
"$rocebench" history add --db "$work/h.sqlite" "$work/out/results.jsonl" >/dev/null || { echo "FAIL: history add"; exit 1; }
"$rocebench" history export --db "$work/h.sqlite" >"$work/export.prom" || { echo "FAIL: history export"; exit 1; }
for i in 0 1 2 3; do
  n=$(grep -c "^rocebench_tcp_RetransSegs{.*counters_of=\"${prefix}$i\".*receiver=\"${prefix}0\"" "$work/export.prom")
  [ "$n" = 1 ] || { echo "FAIL: ${prefix}$i's tcp_RetransSegs in host ${prefix}0's turn: $n exported series, not 1"; exit 1; }
done
echo "ok: history export keeps each host's counters in a series of its own (counters_of)"

# verbs: no RDMA device in the emulated hosts, so one skip record that names each host's reason.
"$rocebench" probe verbs incast --netns "$hosts" --ranks 4 --duration 0.5 --results-dir "$work/verbs" --deadline 20 \
  >"$work/verbs.out" 2>&1 || { echo "FAIL: verbs incast exited $?"; cat "$work/verbs.out"; exit 1; }
/usr/bin/python3 - "$work/verbs/results.jsonl" "$prefix" <<'PY' || exit 1
import json, sys
incast = [r for r in map(json.loads, open(sys.argv[1])) if r.get("step") == "microbench.incast"]
ok = len(incast) == 1 and incast[0]["status"] == "skip" and all(
    f"{sys.argv[2]}{i}: no RDMA device" in incast[0]["reason"] for i in range(4))
print(("ok: " if ok else "FAIL: ") + f"verbs incast: one skip naming every host's reason: {[(r['status'], r.get('reason')) for r in incast]}")
sys.exit(0 if ok else 1)
PY

# Bad input: exit 2, naming the flag (the first two before any rank starts, the receiver once the
# ranks know their hosts).
bad() {
  local flag=$1; shift
  "$rocebench" probe tcp incast "$@" --results-dir "$work/bad" --deadline 20 >"$work/bad.out" 2>&1
  local rc=$?
  if [ "$rc" = 2 ] && grep -q -- "$flag" "$work/bad.out"; then echo "ok: $* exits 2 naming $flag"
  else echo "FAIL: $* exited $rc:"; cat "$work/bad.out"; exit 1; fi
}
bad --duration --netns "$hosts" --ranks 4 --duration 0
bad --tos --netns "$hosts" --ranks 4 --tos 256
bad --receivers --netns "$hosts" --ranks 4 --duration 0.5 --receivers "${prefix}1,nohost"
echo "wall: $(($(date +%s) - start)) s after bring-up"
