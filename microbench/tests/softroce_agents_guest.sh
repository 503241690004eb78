# Runs in each host of a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts 2 THIS OUT -- ROCEBENCH
# LIB TOKEN): every host starts `rocebench agent` on its address; host 0 then runs the all-pairs matrix over verbs
# with `rocebench run --netns` on the bed's hosts file with agent=PORT, so that rank 1 starts on host 1 through
# its agent. Host 0 checks the run and its records (rank 1 on host1, the pair measured over verbs); each host
# checks that its agent ends on SIGTERM with no child left. One PASS/FAIL line per check.
RB=$1
. "$2"
export ROCEBENCH_AGENT_TOKEN=$3
PORT=7411
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

"$RB" agent --listen "$SOFTROCE_IP:$PORT" 2>agent.log &
agent=$!
i=0
while [ $i -lt 200 ] && ! grep -q "listening on" agent.log; do sleep 0.1; i=$((i + 1)); done
grep -q "listening on" agent.log || fail "host $SOFTROCE_HOST's agent is not listening after 20 s"
if [ "$SOFTROCE_HOST" = 0 ]; then
  softroce_go_ahead 300 || fail "host 1 did not come up within 300 s"
  awk -v port=$PORT '{print $1, $2, "agent=" port}' "$SOFTROCE_HOSTS" >hosts-agents
  cat >plan.json <<JSON
{"name": "softroce-agents", "steps": [{"step": "microbench.allpairs", "params": {"transport": "verbs", "device": "$SOFTROCE_DEVICE",
  "gid_index": $SOFTROCE_GID_INDEX, "test": "write_bw", "bytes": 65536, "duration_s": 1.0}}]}
JSON
  start=$(date +%s)
  "$RB" run plan.json --netns hosts-agents --ranks 2 --results-dir res --deadline 120 >run.out 2>&1
  rc=$?
  cat run.out
  echo "the run took $(($(date +%s) - start)) s"
  if [ $rc = 0 ]; then pass "rocebench run --netns through the agents: exit 0"; else fail "rocebench run --netns through the agents: exit $rc"; fi
  /usr/bin/python3 - res/results.jsonl <<'PY' && pass "rank 1 ran on host1; the pair host1->host0 measured over verbs" || fail "the records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
ranks = {h["hostname"]: h.get("ranks") for h in records[0]["hosts"]}
pairs = [r for r in records if r.get("step") == "microbench.allpairs" and not r["params"].get("summary")]
print("ranks by host:", ranks, "pairs:", [(r["params"].get("src"), r["params"].get("dst"), r["params"].get("transport"), r["status"]) for r in pairs])
sys.exit(not (ranks == {"host0": [0], "host1": [1]} and len(pairs) == 1 and pairs[0]["status"] == "ok"
              and pairs[0]["params"]["transport"] == "verbs" and {pairs[0]["params"]["src"], pairs[0]["params"]["dst"]} == {"host0", "host1"}))
PY
  softroce_go_ahead 60 || fail "host 1 did not take the end of the run"
else
  SOFTROCE_PEER=$(softroce_host_ip 0)
  softroce_await_go_ahead 300 || fail "host 0 did not come up within 300 s"
  softroce_await_go_ahead 400 || fail "host 0 did not end its run within 400 s"
fi
grep "rank" agent.log
i=0
while [ $i -lt 100 ] && [ -n "$(pgrep -P $agent)" ]; do sleep 0.1; i=$((i + 1)); done
left=$(pgrep -P $agent)
if [ -z "$left" ]; then pass "no child of host $SOFTROCE_HOST's agent is left after the run"; else fail "children left: $left"; fi
kill -TERM $agent
wait $agent
rc=$?
if [ $rc = 0 ]; then pass "host $SOFTROCE_HOST's agent ends on SIGTERM"; else fail "host $SOFTROCE_HOST's agent exited $rc on SIGTERM"; fi
echo "== $failures failure(s)"
[ $failures -eq 0 ]
