# Helpers for scripts that run inside the soft-RoCE guest (POSIX sh; source it).
# The guest has rxe0 on dummy0 with 10.0.0.1; its RoCE v2 GID is index 1.
SOFTROCE_IP=10.0.0.1
SOFTROCE_DEVICE=rxe0
SOFTROCE_GID_INDEX=1

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

# softroce_perftest TEST ARGS...: runs perftest's ib_TEST server and client on rxe0 and prints its figure:
# t_typical (us) of a latency test, BW average (Gb/s, give --report_gbits) of a bandwidth test.
softroce_perftest() {
  _t=$1
  shift
  softroce_wait_free 18515
  timeout 120 ib_$_t -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX "$@" >/dev/null 2>&1 &
  softroce_wait_listen 18515
  timeout 120 ib_$_t -d $SOFTROCE_DEVICE -x $SOFTROCE_GID_INDEX "$@" $SOFTROCE_IP >perftest.log 2>&1
  wait
  case $_t in
    *lat) awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print $5}' perftest.log ;;
    *bw) awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' perftest.log ;;
  esac
}

# softroce_rocebench ROCEBENCH TEST SIZE ITERS: the same with rocebench's verbs probe (same columns).
softroce_rocebench() {
  softroce_wait_free 18515
  timeout 120 "$1" probe verbs $2 --server --deadline 20 >/dev/null 2>&1 &
  softroce_wait_listen 18515
  timeout 120 "$1" probe verbs $2 --client $SOFTROCE_IP --size $3 --iters $4 --deadline 20 >rocebench.log 2>&1
  wait
  case $2 in
    *lat) awk '$1 ~ /^[0-9]+$/ {print $5}' rocebench.log ;;
    *bw) awk '$1 ~ /^[0-9]+$/ {print $4}' rocebench.log ;;
  esac
}

# softroce_round ROCEBENCH LAT_ITERS BW_ITERS ROUND: one round of perftest and rocebench, each test by both
# tools back to back (so a passing load hits both; the first tool alternates with the round's parity):
# 64 B latency and 64 KiB write bandwidth; "ROUND TEST TOOL FIGURE" lines (no FIGURE: the run gave none).
softroce_round() {
  for _t in write_lat send_lat read_lat write_bw; do
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

# softroce_compare FILE [--coarse] [--scale F]: judges the rounds (ci/testbeds/softroce/compare.py: per test
# the ratio of the two tools' medians, within a factor 2 and then within the target or their spreads); exit 0
# agree, 1 disagree, 77 too noisy to judge finely. Needs SOFTROCE_DIR (this folder) set before sourcing.
softroce_compare() {
  python3 "${SOFTROCE_DIR:?set SOFTROCE_DIR to ci/testbeds/softroce before sourcing lib.sh}/compare.py" "$@"
}
