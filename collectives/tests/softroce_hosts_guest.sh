#!/bin/sh
# Runs in every host of a soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts N THIS OUT -- ROCEBENCH LIB
# TOKEN FAULT_DEADLINE; in CI, microbench's softroce_agents_guest.sh runs it after its agents' part): host K starts
# rank K of each run by hand, as mpirun would on node K: `rocebench run --launcher env --plan PLAN` with RANK,
# WORLD_SIZE, MASTER_ADDR (host 0) and MASTER_PORT. Three runs, the
# hosts meeting (lib.sh's go-ahead, host 0 taking one from every other host) once rank 0 of each listens
# (the guests boot tens of seconds apart on a loaded host):
#   sweep:  allreduce over verbs across the hosts, ring, ps and rd in float32 and ring in float16, odd element
#           counts per rank, every element checked;
#   kill:   a sweep that would run for hours; once rank 0 has started it, host 0 gives host 1 the go-ahead
#           and host 1 kills its own rank (SIGKILL): every other rank must exit 3 naming rank 1 on host1;
#   silent: the same, but host 1 stops its rank (SIGSTOP): its connections stay open, so only the verbs
#           transport's deadline (FAULT_DEADLINE s) can name it (the ranks that wait for it do); once rank 0
#           has failed, host 1 kills the stopped rank.
# Each host checks its own ranks' exits (PASS/FAIL lines, exit 1 on a failure); the records (host 0's
# res-NAME/results.jsonl: rank 0 writes them) are judged by softroce_hosts_judge.py.
# times.txt: when each part began and ended (seconds of guest uptime); counters.txt: rxe0's counters after
# each part.
RB=$1
SOFTROCE_DIR=$(dirname "$2")
TOKEN=$3
FAULT_DEADLINE=$4
SWEEP_DEADLINE=60
. "$2"
world=$(wc -l <"$SOFTROCE_HOSTS")
SOFTROCE_PEER=$(softroce_host_ip 0)  # the rendezvous, and who gives the go-ahead
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
mark() { echo "$1 $(cut -d' ' -f1 /proc/uptime)" >>times.txt; }
counters() {
  echo "== after $1" >>counters.txt
  grep . /sys/class/infiniband/$SOFTROCE_DEVICE/ports/1/hw_counters/* 2>/dev/null | sed 's|.*/||' | grep -v ':0$' >>counters.txt
}

# meet: every host is here (host 0 takes one go-ahead from each other host, on a port of its own so that no
# host's wait for the fault's go-ahead is taken for it).
meet() {
  SOFTROCE_READY_PORT=18517
  if [ "$SOFTROCE_HOST" = 0 ]; then
    k=1
    while [ $k -lt "$world" ]; do
      softroce_go_ahead 300 || { fail "$1: the other hosts did not all meet within 300 s"; break; }
      k=$((k + 1))
    done
  else
    softroce_await_go_ahead 300 || fail "$1: host 0 did not meet within 300 s"
  fi
  SOFTROCE_READY_PORT=18516
}

export RANK=$SOFTROCE_HOST WORLD_SIZE=$world MASTER_ADDR=$SOFTROCE_PEER ROCEBENCH_TOKEN=$TOKEN
# start NAME PORT DEADLINE: this host's rank of run NAME in the background, its pid in $pid; each run has a
# port of its own, so that no rank meets another run's rank 0. Rank 0 starts first and the hosts meet once it
# listens: rocebench's start under TCG on a loaded host takes 10 s and more, which would otherwise count
# against the other ranks' deadline to connect.
start() {
  [ "$SOFTROCE_HOST" = 0 ] || meet "$1"
  MASTER_PORT=$2 "$RB" run --launcher env --plan "$1.json" --run-id "$1" --results-dir "res-$1" --deadline "$3" \
    >"$1.out" 2>"$1.err" &
  pid=$!
  [ "$SOFTROCE_HOST" = 0 ] || return 0
  i=0
  while ! ss -ltn | grep -q ":$2 " && [ $i -lt 600 ]; do sleep 0.2; i=$((i + 1)); done
  [ $i -lt 600 ] || fail "$1: rank 0 did not listen on port $2 within 120 s"
  meet "$1"
}

echo "== host $SOFTROCE_HOST ($SOFTROCE_IP, named $(cat /proc/sys/kernel/hostname)), rank $SOFTROCE_HOST of $world"
mark script

# Sizes 4, 28, 196, 1372, 9604, 67228 and 470596 bytes, rounded to whole elements per rank: odd element
# counts per rank, below and above one 256 KiB ring slot. (Up to 4 MiB took 20 s more on 2 hosts.)
sweep() {  # sweep ALGORITHM DTYPE PLACEMENT
  echo "{\"step\": \"collectives.allreduce\", \"params\": {\"transport\": \"verbs\", \"algorithm\": \"$1\", \"dtype\": \"$2\",
    \"placement\": \"$3\", \"min_bytes\": 4, \"max_bytes\": 1048576, \"factor\": 7, \"warmup\": 1, \"iters\": 2}}"
}
cat >sweep.json <<EOF
{"name": "verbs-allreduce-across-hosts", "steps": [
  $(sweep ring float32 both), $(sweep ps float32 both), $(sweep rd float32 both), $(sweep ring float16 in)]}
EOF
mark sweep
start sweep 29517 $SWEEP_DEADLINE
wait $pid
rc=$?
mark sweep-end
counters sweep
[ "$SOFTROCE_HOST" = 0 ] && cat sweep.out
if [ $rc -eq 0 ]; then pass "sweep: rank $SOFTROCE_HOST exited 0"
else fail "sweep: rank $SOFTROCE_HOST exited $rc: $(tail -5 sweep.err)"; fi

# fault NAME PORT SIGNAL: a sweep of hours; once it is under way host 1 sends its rank SIGNAL. Host 0 marks
# NAME-go when it gives host 1 the go-ahead and NAME-named when rank 0 has named rank 1 on host1.
fault() {
  cat >"$1.json" <<'EOF'
{"name": "verbs-allreduce-fault", "steps": [{"step": "collectives.allreduce", "params": {"transport": "verbs",
  "min_bytes": 65536, "max_bytes": 65536, "factor": 1, "iters": 1000000, "warmup": 0, "placement": "in"}}]}
EOF
  mark "$1"
  start "$1" "$2" "$FAULT_DEADLINE"
  if [ "$SOFTROCE_HOST" = 0 ]; then
    # Rank 0 prints the sweep's header as it starts it: the mesh is up and every rank is in the sweep.
    i=0
    while ! grep -q '^# allreduce' "$1.out" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
    softroce_go_ahead 120 || fail "$1: host 1 did not take the go-ahead within 120 s"
    mark "$1-go"
    # Named: rank 1 by the rendezvous (a loss), or rank 0's own error, at its deadline. (With more than 2
    # hosts, a stopped rank 1 stalls the ring, and rank 0 names the peer it waits for, not necessarily rank 1.)
    i=0
    while ! grep -q 'rank 1 on host host1\|^rocebench run: rank 0 on' "$1.err" 2>/dev/null && [ $i -lt 1200 ]; do
      sleep 0.1
      i=$((i + 1))
    done
    mark "$1-named"
    [ "$3" = STOP ] && { softroce_go_ahead 120 || fail "$1: host 1 did not take the go-ahead to end its rank"; }
  elif [ "$SOFTROCE_HOST" = 1 ]; then
    softroce_await_go_ahead 300 || fail "$1: no go-ahead from host 0"
    sleep 1  # mid-sweep: some iterations done
    kill -"$3" $pid
    mark "$1-$3"
    echo "$1: rank 1 (pid $pid) sent SIG$3"
    if [ "$3" = STOP ]; then
      softroce_await_go_ahead 300 || fail "$1: no go-ahead from host 0 to end the stopped rank"
      kill -KILL $pid
    fi
  fi
  wait $pid
  rc=$?
  mark "$1-end"
  counters "$1"
  if [ "$SOFTROCE_HOST" = 0 ] && [ "$3" = KILL ]; then
    named=$(grep -m1 'rank 1 on host host1' "$1.err")
    if [ $rc -eq 3 ] && [ -n "$named" ]; then pass "$1: rank 0 exited 3 naming rank 1 on host1: $named"
    else fail "$1: rank 0 exited $rc (expected 3, naming rank 1 on host host1): $(tail -3 "$1.err")"; fi
  elif [ "$SOFTROCE_HOST" != 1 ]; then
    if [ $rc -eq 3 ]; then pass "$1: rank $SOFTROCE_HOST exited 3: $(grep -m1 'rank [0-9]* on host' "$1.err")"
    else fail "$1: rank $SOFTROCE_HOST exited $rc, expected 3: $(tail -3 "$1.err")"; fi
  fi
}
fault kill 29518 KILL
fault silent 29519 STOP

cat times.txt
echo "== host $SOFTROCE_HOST: $failures failure(s)"
[ $failures -eq 0 ]
