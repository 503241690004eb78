# Runs inside the soft-RoCE guest (ci/testbeds/softroce/guest.sh run THIS OUT -- ROCEBENCH LIB PART ROUNDS):
# PART "checks": rocebench's verbs tests on rxe0 and their fault paths; PART "compare": rocebench next to
# perftest in interleaved rounds. Exit 0 when every check passes, 1 otherwise; one PASS/FAIL line each.
RB=$1
SOFTROCE_DIR=$(dirname "$2")
. "$2"
PART=$3
ROUNDS=${4:-3}
PORT=18515
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# server TEST ARGS...: a rocebench server in the background (its log in srv.log).
server() {
  softroce_wait_free $PORT
  timeout 120 "$RB" probe verbs "$@" --server --deadline 20 >srv.log 2>&1 &
  srv_pid=$!
  softroce_wait_listen $PORT
}

# Every record of FILE from TEST is ok, carries nic_* metrics with packets counted under the shared names
# (rxe's own names recorded as their sources), and (when asked) was validated.
check_records() {
  python3 - "$@" <<'EOF'
import json, sys
path, test, validated = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
recs = [json.loads(l) for l in open(path) if l.strip()]
recs = [r for r in recs if r.get("params", {}).get("test") == test]
assert recs, f"no {test} record"
for r in recs:
    assert r["status"] == "ok", f"{test}: status {r['status']}: {r.get('reason')}"
    nic = {k: v for k, v in r["metrics"].items() if k.startswith("nic_")}
    assert nic.get("nic_tx_packets", 0) > 0 and nic.get("nic_rx_packets", 0) > 0, f"{test}: no packet counters: {sorted(nic)}"
    assert "nic_sent_pkts" not in nic, f"{test}: rxe's own name recorded beside the shared one"
    notes = r["samples"]
    assert notes["nic_driver"]["name"] == "rxe", f"{test}: driver {notes.get('nic_driver')}"
    assert notes["counter_sources"]["tx_packets"] == "hw_counters/sent_pkts", f"{test}: {notes.get('counter_sources')}"
    assert "counters_reset" not in notes, f"{test}: counters went back: {notes['counters_reset']}"
    if validated:
        assert r["params"].get("validated") is True, f"{test}: not validated"
    assert r["params"].get("active_mtu") == 1024 or r["metrics"].get("active_mtu") == 1024, f"{test}: active MTU missing"
print(f"{test}: {len(recs)} record(s), nic_tx_packets {recs[0]['metrics']['nic_tx_packets']}")
EOF
}

if [ "$PART" = compare ]; then
echo "== rocebench next to perftest on the same rxe0, interleaved rounds (ROUND TEST TOOL FIGURE)"
# This part fails on the coarse check alone; the fine judgement of the same rounds (compare.txt in the
# output folder) is a CTest of its own, which may say too noisy.
softroce_judged_rounds "$RB" "$ROUNDS" compare.txt
fine=$? r=$SOFTROCE_ROUNDS_RUN
echo "== fine judgement after $r rounds (exit $fine; judged again by its own CTest):"
cat fine.txt
if softroce_compare compare.txt --coarse >coarse.txt; then
  pass "rocebench within a factor 2 of perftest on every test ($r rounds)"
else
  fail "rocebench a factor 2 or more from perftest ($r rounds)"
fi
cat coarse.txt
# The check can fail on these very rounds: with rocebench's figures at 1/8 (bits read as bytes) it must.
if softroce_compare compare.txt --coarse --scale 0.125 >eighth.txt; then
  fail "the same rounds with rocebench's figures at 1/8 pass the coarse check:"; cat eighth.txt
else
  pass "the same rounds with rocebench's figures at 1/8 fail the coarse check"
fi

else
echo "== every test, data validated, rdma_cm and out-of-band connection"
for spec in "write_lat cm" "send_lat cm" "read_lat cm" "write_bw cm" "send_bw cm" "read_bw cm" \
            "write_lat oob" "send_bw oob"; do
  set -- $spec
  server "$1" --connect "$2"
  if timeout 120 "$RB" probe verbs "$1" --client $SOFTROCE_IP --connect "$2" --size 4K --iters 200 --deadline 20 \
       --validate --results "func-$1-$2" >client.log 2>&1 && wait $srv_pid &&
     check_records func-$1-$2/*/results.jsonl "$1" 1; then
    pass "$1 over $2"
  else
    fail "$1 over $2"; cat client.log srv.log
  fi
  wait
done

echo "== bidirectional bandwidth (perftest -b): both sides post windows, the record sums both directions"
for spec in "write_bw cm" "send_bw oob" "read_bw cm"; do
  set -- $spec
  server "$1" --connect "$2" --bidirectional
  if timeout 120 "$RB" probe verbs "$1" --client $SOFTROCE_IP --connect "$2" --bidirectional --size 4K --iters 200 \
       --deadline 20 --validate --results "bidi-$1" >client.log 2>&1 && wait $srv_pid &&
     check_records bidi-$1/*/results.jsonl "$1" 1 && python3 - bidi-$1/*/results.jsonl <<'EOF'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]
m = r["metrics"]
assert r["params"].get("bidirectional") is True, r["params"]
assert m["fwd_bw_avg_Gbps"] > 0 and m["rev_bw_avg_Gbps"] > 0, m
assert abs(m["bw_avg_Gbps"] - m["fwd_bw_avg_Gbps"] - m["rev_bw_avg_Gbps"]) < 1e-9, m
print(f"both ways {m['bw_avg_Gbps']:.3f} Gb/s = {m['fwd_bw_avg_Gbps']:.3f} + {m['rev_bw_avg_Gbps']:.3f}")
EOF
  then
    pass "$1 --bidirectional over $2"
  else
    fail "$1 --bidirectional over $2"; cat client.log srv.log
  fi
  wait
done

echo "== read_lat in duration mode"
server read_lat
if timeout 120 "$RB" probe verbs read_lat --client $SOFTROCE_IP --size 64 --duration 1 --deadline 20 --results dur \
     >client.log 2>&1 && python3 -c '
import json; import glob; r = [json.loads(l) for l in open(glob.glob("dur/*/results.jsonl")[0])][-1]
assert r["status"] == "ok" and r["params"]["duration_s"] == 1 and r["samples"]["n"] > 10, r'; then
  pass "read_lat --duration"
else
  fail "read_lat --duration"; cat client.log srv.log
fi
wait

echo "== bad input and faults"
out=$(timeout 60 "$RB" probe verbs write_lat --client $SOFTROCE_IP --device mlx5_9 2>&1); rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "unknown RDMA device 'mlx5_9'.*rxe0"; then pass "unknown device"; else fail "unknown device (exit $rc): $out"; fi

# A GPU buffer asked for where there is an RDMA device but no GPU: skip, naming the GPU.
out=$(timeout 60 "$RB" probe verbs write_bw --client $SOFTROCE_IP --gpu 0 2>&1); rc=$?
if [ $rc -eq 0 ] && echo "$out" | grep -q "skip: --gpu 0: "; then pass "--gpu without a GPU skips: $out"; else fail "--gpu without a GPU (exit $rc): $out"; fi

server write_lat --connect oob
out=$(timeout 60 "$RB" probe verbs write_lat --client $SOFTROCE_IP --connect oob --gid-index 7 2>&1); rc=$?
if [ $rc -eq 2 ] && echo "$out" | grep -q "GID index 7 .*1 (RoCE v2"; then pass "unknown GID index"; else fail "unknown GID index (exit $rc): $out"; fi
kill $srv_pid 2>/dev/null; wait

start=$(date +%s)
out=$(timeout 60 "$RB" probe verbs write_lat --server --deadline 3 2>&1); rc=$?
took=$(($(date +%s) - start))
if [ $rc -eq 3 ] && [ $took -lt 30 ]; then pass "lonely server gave up after ${took} s"; else fail "lonely server (exit $rc, ${took} s): $out"; fi

server write_bw
timeout 120 "$RB" probe verbs write_bw --client $SOFTROCE_IP --all --iters 200 --deadline 5 --results killed \
  >client.log 2>&1 &
client_pid=$!
i=0
while [ $i -lt 300 ] && [ "$(cat killed/*/results.jsonl 2>/dev/null | wc -l)" -lt 2 ]; do sleep 0.2; i=$((i + 1)); done
kill -9 $srv_pid
wait $client_pid; rc=$?
kept=$(cat killed/*/results.jsonl | grep -c '"status":"ok"')
if [ $rc -eq 3 ] && grep -q "$SOFTROCE_IP:$PORT" client.log && [ "$kept" -ge 2 ]; then
  pass "server killed mid-sweep: exit 3, $kept earlier records kept: $(tail -1 client.log)"
else
  fail "server killed mid-sweep (exit $rc, $kept records kept)"; cat client.log
fi
wait

fi

echo "== $failures failure(s)"
[ $failures -eq 0 ] || exit 1
