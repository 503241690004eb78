# Sourced, after lib.sh, by the guest scripts that drive a soft-RoCE bed through
# rocebench's agents, as an operator's node drives a cluster. Needs RB (rocebench) and
# ROCEBENCH_AGENT_TOKEN. Gives:
#   pass/fail WHAT: a PASS/FAIL line, failures counted in $failures;
#   agents_up: rdma_cm's default ToS set to the lossless profile's DSCP 26 (as an operator would), this
#     host's agent started on its address; on host 0, once every other host's agent answers, the hosts
#     file hosts-agents (agent=PORT) that `rocebench … --netns` reads;
#   on_every_host SECONDS WHAT ARGV...: host 0 runs ARGV on every other host through its agent, each until
#     it succeeds or SECONDS pass (an agent not yet up refuses the connection): the bed's barriers go
#     through the agents, as the runs do;
#   agents_end: host 0 tells the others its runs are over, they wait for it (AGENTS_END_S, 600 s); then every host
#     checks that its agent left no child and ends on SIGTERM, and prints the failure count.
PORT=7411
END=/tmp/softroce-agents-end
world=$(wc -l <"$SOFTROCE_HOSTS")
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

on_every_host() {
  _seconds=$1 _what=$2
  shift 2
  k=1
  while [ $k -lt "$world" ]; do
    _until=$(($(date +%s) + _seconds))
    until "$RB" agent --run "$(softroce_host_ip $k):$PORT" -- "$@" 2>>relay.log; do
      [ "$(date +%s)" -lt $_until ] || { fail "$_what: host $k's agent did not run it within $_seconds s"; break; }
      sleep 1
    done
    k=$((k + 1))
  done
}

agents_up() {
  cm=/sys/kernel/config/rdma_cm/$SOFTROCE_DEVICE
  mkdir -p $cm && echo 106 >$cm/ports/1/default_roce_tos || fail "cannot set rdma_cm's default ToS in $cm"
  "$RB" agent --listen "$SOFTROCE_IP:$PORT" 2>agent.log &
  agent=$!
  i=0
  while [ $i -lt 200 ] && ! grep -q "listening on" agent.log; do sleep 0.1; i=$((i + 1)); done
  grep -q "listening on" agent.log || fail "host $SOFTROCE_HOST's agent is not listening after 20 s"
  if [ "$SOFTROCE_HOST" = 0 ]; then
    on_every_host 300 "the agents" true
    awk -v port=$PORT '{print $1, $2, "agent=" port}' "$SOFTROCE_HOSTS" >hosts-agents
  fi
}

agents_end() {
  if [ "$SOFTROCE_HOST" = 0 ]; then
    on_every_host 60 "the end of the runs" touch $END
  else
    i=0
    while [ $i -lt "${AGENTS_END_S:-600}" ] && [ ! -e $END ]; do sleep 1; i=$((i + 1)); done
    [ -e $END ] || fail "host 0 did not end its runs within ${AGENTS_END_S:-600} s"
  fi
  grep "rank" agent.log
  i=0
  while [ $i -lt 100 ] && [ -n "$(pgrep -P $agent)" ]; do sleep 0.1; i=$((i + 1)); done
  left=$(pgrep -P $agent)
  if [ -z "$left" ]; then pass "no child of host $SOFTROCE_HOST's agent is left after the runs"; else fail "children left: $left"; fi
  kill -TERM $agent
  wait $agent
  rc=$?
  if [ $rc = 0 ]; then pass "host $SOFTROCE_HOST's agent ends on SIGTERM"; else fail "host $SOFTROCE_HOST's agent exited $rc on SIGTERM"; fi
  echo "== $failures failure(s)"
}
