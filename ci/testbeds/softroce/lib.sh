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

# softroce_round ROCEBENCH LAT_ITERS BW_ITERS: one round of perftest and rocebench, each test by both
# tools back to back (so noise hits both): 64 B latency and 64 KiB write bandwidth; "TEST TOOL FIGURE" lines.
softroce_round() {
  for _t in write_lat send_lat read_lat; do
    echo "$_t perftest $(softroce_perftest $_t -s 64 -n $2)"
    echo "$_t rocebench $(softroce_rocebench "$1" $_t 64 $2)"
  done
  echo "write_bw perftest $(softroce_perftest write_bw -s 65536 -n $3 --report_gbits)"
  echo "write_bw rocebench $(softroce_rocebench "$1" write_bw 64K $3)"
}

# softroce_rounds ROCEBENCH ROUNDS LAT_ITERS BW_ITERS: ROUNDS interleaved rounds.
softroce_rounds() {
  _r=1
  while [ $_r -le "$2" ]; do
    softroce_round "$1" "$3" "$4"
    _r=$((_r + 1))
  done
}

# softroce_compare FILE: per test, both tools' figures, medians, ratio and run-to-run spread (the larger
# range of the two tools over the rounds); exits 1 when the medians differ by more than that spread.
softroce_compare() {
  python3 - "$1" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    f = line.split()
    runs.setdefault(f[0], {}).setdefault(f[1], []).append(float(f[2]) if len(f) > 2 else float("nan"))
ok = True
for test, tools in runs.items():
    pt, rb = tools["perftest"], tools["rocebench"]
    unit = "BW average Gb/s" if test.endswith("bw") else "t_typical us"
    if any(v != v for v in pt + rb):
        print(f"{test:9} {unit}: a run gave no figure: perftest {pt} rocebench {rb}")
        ok = False
        continue
    spread = max(max(pt) - min(pt), max(rb) - min(rb))
    mp, mr = statistics.median(pt), statistics.median(rb)
    agree = abs(mr - mp) <= spread
    print(f"{test:9} {unit}: perftest median {mp:.3f} {pt}, rocebench median {mr:.3f} {rb}, "
          f"ratio {mr / mp:.3f}, n={len(pt)} rounds, spread {spread:.3f}: {'agree' if agree else 'DISAGREE'}")
    ok &= agree
sys.exit(0 if ok else 1)
PY
}
