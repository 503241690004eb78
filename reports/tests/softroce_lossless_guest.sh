# Runs in each host of a soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts N [--loss-of LOSSY=P] THIS OUT --
# ROCEBENCH LIB TOKEN LOSSLESS_JUDGE LOSSY): every host starts `rocebench agent` (ci/testbeds/softroce/agents.sh),
# and host 0 runs the verbs incast across the bed through the agents, every host the receiver once, each reading
# its rxe0's counters before and after every turn; the run judges itself (exit 1 when a host is LOSSY, naming
# it); LOSSLESS_JUDGE (reports' judge_incast over verbs) then gives
# each host's verdict: host LOSSY (its link drops, netem) LOSSY with the counters that rose, every other host
# not LOSSY; with LOSSY -1 (no lossy link), no host LOSSY. The records stay in kept/incast.jsonl.
RB=$1
. "$2"
export ROCEBENCH_AGENT_TOKEN=$3
JUDGE=$4
LOSSY=$5
. "$(dirname "$2")/agents.sh"
agents_up
if [ "$SOFTROCE_HOST" = 0 ]; then
  start=$(date +%s)
  "$RB" probe verbs incast --netns hosts-agents --ranks "$world" --size 64K --duration 2 --results-dir /tmp/incast --deadline 120 >incast.out 2>&1
  rc=$?
  cat incast.out
  echo "the incast took $(($(date +%s) - start)) s"
  # The run judges its own records: exit 1 with the lossy host's verdict, 0 with none.
  want=$([ "$LOSSY" -ge 0 ] && echo 1 || echo 0)
  if [ $rc = "$want" ]; then pass "rocebench probe verbs incast across $world hosts: exit $rc"; else fail "rocebench probe verbs incast: exit $rc, not $want"; fi
  if [ "$LOSSY" -ge 0 ]; then
    grep -q "^fail: host$LOSSY under verbs incast: LOSSY" incast.out && pass "the run's own verdict fails host$LOSSY, LOSSY" ||
      fail "the run's output does not fail host$LOSSY as LOSSY"
  fi
  mkdir -p kept && cp /tmp/incast/results.jsonl kept/incast.jsonl
  "$JUDGE" kept/incast.jsonl verbs >verdict.txt
  cat verdict.txt
  k=0
  while [ $k -lt "$world" ]; do
    got=$(awk -v host=host$k '/^[^ ]/ && $1 == host {print $2}' verdict.txt)
    if [ $k = "$LOSSY" ]; then
      if [ "$got" = LOSSY ]; then pass "host$k (its link drops) is LOSSY"; else fail "host$k (its link drops) is '$got', not LOSSY"; fi
    elif [ -n "$got" ] && [ "$got" != LOSSY ]; then
      pass "host$k is $got, not LOSSY"
    else
      fail "host$k is '$got'"
    fi
    k=$((k + 1))
  done
  if [ "$LOSSY" -ge 0 ]; then
    grep -Eq "nic_(seq_naks_rx|ack_timeouts|retries_exceeded) \(hw_counters/[a-z_]+\) rose by [1-9][0-9]* .*(while host$LOSSY sent to|sent to host$LOSSY)" verdict.txt &&
      pass "the evidence names rxe's counters that rose on host$LOSSY's link" || fail "no counter evidence of host$LOSSY's loss"
  fi
fi
agents_end
[ $failures -eq 0 ]
