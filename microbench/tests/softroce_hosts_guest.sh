# Runs in each host of a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts 2 THIS OUT -- ROCEBENCH
# LIB ROUNDS): host 1 serves, host 0 is the client. ROUNDS interleaved rounds of rocebench's verbs probe and
# perftest, write_lat (64 B) and write_bw (64 KiB), 1000 iterations each, across the link; host 0 judges
# them (compare.txt), host 1 checks that its rxe0 received what was sent. One PASS/FAIL line per check.
RB=$1
SOFTROCE_DIR=$(dirname "$2")
ROUNDS=$3
SOFTROCE_TESTS="write_lat write_bw"
if [ "$SOFTROCE_HOST" = 1 ]; then SOFTROCE_ROLE=server; else SOFTROCE_ROLE=client; fi
. "$2"
SOFTROCE_PEER=$(softroce_host_ip 1)
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
counter() { cat /sys/class/infiniband/$SOFTROCE_DEVICE/ports/1/hw_counters/$1; }

echo "== host $SOFTROCE_HOST ($SOFTROCE_IP, $SOFTROCE_ROLE of $SOFTROCE_PEER): $ROUNDS rounds, ROUND TEST TOOL FIGURE"
rcvd=$(counter rcvd_pkts) sent=$(counter sent_pkts)
softroce_meet || fail "host 0 and host 1 did not meet within 300 s"
start=$(date +%s)
# The client's rounds are judged (compare.txt); the server's lines carry no figures (served.txt).
rounds=compare.txt
[ "$SOFTROCE_ROLE" = server ] && rounds=served.txt
softroce_rounds "$RB" "$ROUNDS" 1000 1000 | tee $rounds
rcvd=$(($(counter rcvd_pkts) - rcvd)) sent=$(($(counter sent_pkts) - sent))
echo "rxe0 on host $SOFTROCE_HOST: $rcvd packets received, $sent sent, in $(($(date +%s) - start)) s"

if [ "$SOFTROCE_HOST" = 1 ]; then
  # The client's writes alone: 1000 64 B writes and 1000 64 KiB ones (64 packets each at the active MTU of
  # 1024) per tool per round; host 1 runs no client, so every one of them crossed the link.
  least=$((ROUNDS * 2 * (1000 + 1000 * 64)))
  if [ "$rcvd" -ge $least ]; then pass "rxe0 on host 1 received $rcvd packets from host 0 (at least $least)"
  else fail "rxe0 on host 1 received $rcvd packets, fewer than the $least host 0's writes alone need"; fi
else
  echo "== the rounds judged (fine, exit $(softroce_compare compare.txt >fine.txt; echo $?); judged again by its own CTest):"
  cat fine.txt
  if softroce_compare compare.txt --coarse >coarse.txt; then pass "rocebench within a factor 2 of perftest across hosts ($ROUNDS rounds)"
  else fail "rocebench a factor 2 or more from perftest across hosts ($ROUNDS rounds)"; fi
  cat coarse.txt
  # The check can fail on these very rounds: with rocebench's figures at 1/8 (bits read as bytes) it must.
  if softroce_compare compare.txt --coarse --scale 0.125 >eighth.txt; then fail "the same rounds at 1/8 pass the coarse check:"; cat eighth.txt
  else pass "the same rounds with rocebench's figures at 1/8 fail the coarse check"; fi
fi
echo "== $failures failure(s)"
[ $failures -eq 0 ] || exit 1
