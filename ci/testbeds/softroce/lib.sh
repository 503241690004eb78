# Helpers for scripts that run inside the soft-RoCE guest (POSIX sh; source it).
# One guest has rxe0 on dummy0 with 10.0.0.1; a bed host (guest.sh run --hosts) has rxe0 on eth0 with its
# address from $SOFTROCE_HOSTS. Either way the IPv4 address's RoCE v2 GID is index 1.
SOFTROCE_IP=10.0.0.1
SOFTROCE_DEVICE=rxe0
SOFTROCE_GID_INDEX=1
if [ -n "${SOFTROCE_HOSTS:-}" ]; then SOFTROCE_IP=$(awk -v h="$SOFTROCE_HOST" 'NR == h + 1 {print $2}' "$SOFTROCE_HOSTS"); fi
# Who runs what, test by test: "both" (default) runs server and client here, against SOFTROCE_IP; across two
# bed hosts, one is the "server" and the other the "client" of SOFTROCE_PEER (the server's address). Both
# hosts then run the same sequence of tests; before each, the client waits for the server's go-ahead on
# SOFTROCE_READY_PORT (perftest's client does not retry, and a probe of the test's own port would be taken
# for its client).
SOFTROCE_ROLE=${SOFTROCE_ROLE:-both}
SOFTROCE_PEER=${SOFTROCE_PEER:-$SOFTROCE_IP}
SOFTROCE_READY_PORT=18516
SOFTROCE_TESTS=${SOFTROCE_TESTS:-write_lat send_lat read_lat write_bw}

# softroce_host_ip K: bed host K's address.
softroce_host_ip() {
  awk -v h="$1" 'NR == h + 1 {print $2}' "${SOFTROCE_HOSTS:?not a bed host (guest.sh run --hosts)}"
}

# The server's side of the go-ahead: waits (up to $1 s, default 120) until a client has taken it. The word
# "go" is the go-ahead, not the connection: with more than one client, a second one connecting at once lands
# in the listen backlog, and its connect succeeds although no one accepts it (it then reads nothing, and tries again).
softroce_go_ahead() {
  timeout "${1:-120}" busybox nc -l -p $SOFTROCE_READY_PORT -e echo go
}

# The client's side: waits (up to $1 s, default 120) until the server at SOFTROCE_PEER gives the go-ahead.
softroce_await_go_ahead() {
  _until=$(($(date +%s) + ${1:-120}))
  while [ "$(date +%s)" -lt $_until ]; do
    timeout 5 busybox nc -w 2 "$SOFTROCE_PEER" $SOFTROCE_READY_PORT -e sh -c 'read w; [ "$w" = go ]' 2>/dev/null && return 0
    sleep 0.2
  done
  echo "no go-ahead from $SOFTROCE_PEER:$SOFTROCE_READY_PORT after ${1:-120} s" >&2
  return 1
}

# softroce_meet [SECONDS]: both hosts of a pair are up (a barrier before the first test; no-op in one guest).
softroce_meet() {
  case $SOFTROCE_ROLE in
    server) softroce_go_ahead "${1:-300}" ;;
    client) softroce_await_go_ahead "${1:-300}" ;;
  esac
}

# Waits (up to 20 s) until something listens on TCP port $1; perftest's client does not retry.
softroce_wait_listen() {
  i=0
  while [ $i -lt 100 ]; do
    ss -ltn | grep -q ":$1 " && return 0
    sleep 0.2
    i=$((i + 1))
  done
  echo "nothing listens on port $1 after 20 s" >&2
  return 1
}

# Waits (up to 20 s) until nothing listens on TCP port $1 any more (the last server is gone).
softroce_wait_free() {
  i=0
  while [ $i -lt 100 ]; do
    ss -ltn | grep -q ":$1 " || return 0
    sleep 0.2
    i=$((i + 1))
  done
  return 1
}

# softroce_serve COMMAND...: the server of one test, by role. Here ("both"): started in the background once
# its port is free, returns when it listens. A bed's server: the same, then the go-ahead, then returns when
# the server has ended. A bed's client: returns at the go-ahead. Exit status 0: the client may run.
softroce_serve() {
  if [ "$SOFTROCE_ROLE" = client ]; then
    softroce_await_go_ahead
    return
  fi
  softroce_wait_free 18515
  timeout 120 "$@" >/dev/null 2>&1 &
  softroce_wait_listen 18515
  if [ "$SOFTROCE_ROLE" = server ]; then
    softroce_go_ahead
    wait
  fi
}

# softroce_perftest TEST ARGS...: runs perftest's ib_TEST server and client on rxe0 and prints its figure:
# t_typical (us) of a latency test, BW average (Gb/s, give --report_gbits) of a bandwidth test. (A bed's
# server prints nothing.)
softroce_perftest() {
  _t=$1
  shift
  softroce_serve ib_$_t -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX "$@" || return 0
  [ "$SOFTROCE_ROLE" = server ] && return 0
  timeout 120 ib_$_t -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX "$@" $SOFTROCE_PEER >perftest.log 2>&1
  wait
  case $_t in
    *lat) awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print $5}' perftest.log ;;
    *bw) awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' perftest.log ;;
  esac
}

# softroce_rocebench ROCEBENCH TEST SIZE ITERS: the same with rocebench's verbs probe (same columns).
softroce_rocebench() {
  softroce_serve "$1" probe verbs $2 --server --deadline 20 || return 0
  [ "$SOFTROCE_ROLE" = server ] && return 0
  timeout 120 "$1" probe verbs $2 --client $SOFTROCE_PEER --size $3 --iters $4 --deadline 20 >rocebench.log 2>&1
  wait
  case $2 in
    *lat) awk '$1 ~ /^[0-9]+$/ {print $5}' rocebench.log ;;
    *bw) awk '$1 ~ /^[0-9]+$/ {print $4}' rocebench.log ;;
  esac
}

# softroce_round ROCEBENCH LAT_ITERS BW_ITERS ROUND: one round of perftest and rocebench, each test by both
# tools back to back (so a passing load hits both; the first tool alternates with the round's parity):
# 64 B latency and 64 KiB write bandwidth (the tests in SOFTROCE_TESTS); "ROUND TEST TOOL FIGURE" lines (no
# FIGURE: the run gave none).
softroce_round() {
  for _t in $SOFTROCE_TESTS; do
    case $_t in
      *lat) _pt="-s 64 -n $2" _rb="64 $2" ;;
      *bw) _pt="-s 65536 -n $3 --report_gbits" _rb="64K $3" ;;
    esac
    if [ $(($4 % 2)) -eq 1 ]; then
      echo "$4 $_t perftest $(softroce_perftest $_t $_pt)"
      echo "$4 $_t rocebench $(softroce_rocebench "$1" $_t $_rb)"
    else
      echo "$4 $_t rocebench $(softroce_rocebench "$1" $_t $_rb)"
      echo "$4 $_t perftest $(softroce_perftest $_t $_pt)"
    fi
  done
}

# softroce_rounds ROCEBENCH ROUNDS LAT_ITERS BW_ITERS: ROUNDS interleaved rounds.
softroce_rounds() {
  _r=1
  while [ $_r -le "$2" ]; do
    softroce_round "$1" "$3" "$4" $_r
    _r=$((_r + 1))
  done
}

# softroce_judged_rounds ROCEBENCH MAX_ROUNDS FILE: 3 interleaved rounds into FILE, then more (up to MAX_ROUNDS)
# while the fine judgement does not find every test in agreement, for up to 90 s after the third; the
# fine judgement of the last round in fine.txt. A round that tips a test over the tolerance does not end the
# run (stopping at the first disagreement would fail on one unlucky round; the judgement of all rounds
# decides). The 90 s count from the third round: under CI's load 3 rounds took over 90 s, and TCG's latency
# modes (~11 and ~20 us) once put all 3 of rocebench's write_lat runs in the slow one, with no round left to
# say so. Across two bed hosts the client judges, and tells the server at SOFTROCE_JUDGE (the client's
# address) whether another round follows. SOFTROCE_MORE_ROUNDS_ON: the judgements that ask for another round
# (default "1 77": a disagreement, or too noisy to judge). Sets SOFTROCE_ROUNDS_RUN; returns the fine
# judgement's exit.
softroce_judged_rounds() {
  _r=0 _fine=77 _more=yes
  : >"$3"
  while [ $_r -lt 3 ] || [ "$_more" = yes ]; do
    _r=$((_r + 1))
    softroce_round "$1" 1000 1000 $_r | tee -a "$3"
    [ $_r = 3 ] && _third=$(date +%s)
    [ $_r -lt 3 ] && continue
    if [ "$SOFTROCE_ROLE" = server ]; then
      _more=$(softroce_hear "${SOFTROCE_JUDGE:?set SOFTROCE_JUDGE to the client's address}") || _more=no
      continue
    fi
    softroce_compare "$3" >fine.txt
    _fine=$?
    _more=no
    case " ${SOFTROCE_MORE_ROUNDS_ON:-1 77} " in
      *" $_fine "*) [ $_r -lt "$2" ] && [ $(($(date +%s) - _third)) -lt 90 ] && _more=yes ;;
    esac
    [ "$SOFTROCE_ROLE" = client ] && softroce_tell $_more
  done
  SOFTROCE_ROUNDS_RUN=$_r
  return $_fine
}

# The judging client's word to the server ("yes": another round), on SOFTROCE_WORD_PORT: the client
# listens until the server has read it (up to 120 s); the server asks the client at $1 (up to 120 s;
# exit 1 and no word when none came).
SOFTROCE_WORD_PORT=18517
softroce_tell() {
  timeout 120 busybox nc -l -p $SOFTROCE_WORD_PORT -e echo "$1"
}
softroce_hear() {
  _until=$(($(date +%s) + 120))
  while [ "$(date +%s)" -lt $_until ]; do
    _w=$(timeout 5 busybox nc -w 2 "$1" $SOFTROCE_WORD_PORT </dev/null 2>/dev/null)
    [ -n "$_w" ] && { echo "$_w"; return 0; }
    sleep 0.2
  done
  echo "no word from the judging client at $1:$SOFTROCE_WORD_PORT after 120 s" >&2
  return 1
}

# softroce_compare FILE [--coarse] [--scale F]: judges the rounds (ci/testbeds/softroce/compare.py: per test
# the ratio of the two tools' medians, within a factor 2 and then within the target or their spreads); exit 0
# agree, 1 disagree, 77 too noisy to judge finely. Needs SOFTROCE_DIR (this folder) set before sourcing.
softroce_compare() {
  python3 "${SOFTROCE_DIR:?set SOFTROCE_DIR to ci/testbeds/softroce before sourcing lib.sh}/compare.py" "$@"
}
