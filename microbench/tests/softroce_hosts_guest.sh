# Runs in each host of a 2-host soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts 2 THIS OUT -- ROCEBENCH
# LIB ROUNDS): host 1 serves, host 0 is the client. 3 interleaved rounds of rocebench's verbs probe and
# perftest, write_lat (64 B) and write_bw (64 KiB), 1000 iterations each, across the link, then more (up to
# ROUNDS) while the fine judgement finds a test in disagreement (softroce_judged_rounds; across hosts under TCG
# more rounds of a test too noisy to judge stayed too noisy, 7 rounds in each of 3 CI runs); host 0 judges
# them (compare.txt); then rocebench's send_bw and read_lat across it, each giving its figure; host 1 checks
# that its rxe0 received what was sent. Then each host runs netcheck on its
# rxe0 against the lossless profile (netcheck.txt, issue #40). One PASS/FAIL line per check.
RB=$1
SOFTROCE_DIR=$(dirname "$2")
ROUNDS=$3
SOFTROCE_TESTS="write_lat write_bw"
if [ "$SOFTROCE_HOST" = 1 ]; then SOFTROCE_ROLE=server; else SOFTROCE_ROLE=client; fi
. "$2"
SOFTROCE_PEER=$(softroce_host_ip 1) SOFTROCE_JUDGE=$(softroce_host_ip 0)
failures=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
counter() { cat /sys/class/infiniband/$SOFTROCE_DEVICE/ports/1/hw_counters/$1; }

echo "== host $SOFTROCE_HOST ($SOFTROCE_IP, $SOFTROCE_ROLE of $SOFTROCE_PEER): 3 to $ROUNDS rounds, ROUND TEST TOOL FIGURE"
rcvd=$(counter rcvd_pkts) sent=$(counter sent_pkts)
softroce_meet || fail "host 0 and host 1 did not meet within 300 s"
start=$(date +%s)
# The client's rounds are judged (compare.txt); the server's lines carry no figures (served.txt).
rounds=compare.txt
[ "$SOFTROCE_ROLE" = server ] && rounds=served.txt
SOFTROCE_MORE_ROUNDS_ON=1 softroce_judged_rounds "$RB" "$ROUNDS" $rounds
fine=$? ROUNDS=$SOFTROCE_ROUNDS_RUN
# The probe's other verbs tests across the link, rocebench alone (their perftest twins are compared on one
# host, microbench_verbs_softroce_compare): each gives its figure.
for t in send_bw read_lat; do
  case $t in *lat) args="64 1000" ;; *bw) args="64K 1000" ;; esac
  figure=$(softroce_rocebench "$RB" $t $args)
  [ "$SOFTROCE_ROLE" = server ] && continue
  case $t in *lat) unit=us ;; *bw) unit=Gb/s ;; esac
  if [ -n "$figure" ]; then pass "rocebench probe verbs $t from host 0 to host 1: $figure $unit"
  else fail "rocebench probe verbs $t from host 0 to host 1 gave no figure:"; cat rocebench.log; fi
done
rcvd=$(($(counter rcvd_pkts) - rcvd)) sent=$(($(counter sent_pkts) - sent))
echo "rxe0 on host $SOFTROCE_HOST: $rcvd packets received, $sent sent, in $(($(date +%s) - start)) s"

if [ "$SOFTROCE_HOST" = 1 ]; then
  # The client's writes alone: 1000 64 B writes and 1000 64 KiB ones (65536 / MTU packets each at the port's
  # active MTU) per tool per round; host 1 runs no client, so every one of them crossed the link.
  mtu=$(ibv_devinfo -d $SOFTROCE_DEVICE | awk '$1 == "active_mtu:" {print $2}')
  least=$((ROUNDS * 2 * (1000 + 1000 * (65536 / ${mtu:-1024}))))
  if [ "$rcvd" -ge $least ]; then pass "rxe0 on host 1 received $rcvd packets from host 0 (at least $least)"
  else fail "rxe0 on host 1 received $rcvd packets, fewer than the $least host 0's writes alone need"; fi
else
  echo "== the rounds judged (fine, after $ROUNDS rounds, exit $fine; judged again by its own CTest):"
  cat fine.txt
  if softroce_compare compare.txt --coarse >coarse.txt; then pass "rocebench within a factor 2 of perftest across hosts ($ROUNDS rounds)"
  else fail "rocebench a factor 2 or more from perftest across hosts ($ROUNDS rounds)"; fi
  cat coarse.txt
  # The check can fail on these very rounds: with rocebench's figures at 1/8 (bits read as bytes) it must.
  if softroce_compare compare.txt --coarse --scale 0.125 >eighth.txt; then fail "the same rounds at 1/8 pass the coarse check:"; cat eighth.txt
  else pass "the same rounds with rocebench's figures at 1/8 fail the coarse check"; fi
fi

# netcheck on this host's real RDMA device, after its traffic: rdma_cm's default ToS set to the profile's
# DSCP 26 with ECT(0) first, as an operator would. What applies to rxe is judged and passes (the bed's MTU is
# jumbo); PFC, DSCP trust, ECN and CNPs are skipped with rxe's reason; nothing is unverified; it ends in time.
echo "== netcheck on host $SOFTROCE_HOST's $SOFTROCE_DEVICE (lossless-roce)"
cm=/sys/kernel/config/rdma_cm/$SOFTROCE_DEVICE
mkdir -p $cm && echo 106 > $cm/ports/1/default_roce_tos || fail "cannot set rdma_cm's default ToS in $cm"
start=$(date +%s)
timeout 60 "$RB" netcheck --root / --profile lossless-roce > netcheck.txt 2>&1
rc=$?
took=$(($(date +%s) - start))
cat netcheck.txt
echo "netcheck took $took s"
if [ $rc = 0 ]; then pass "netcheck exit 0 in $took s (deadline 60 s)"; else fail "netcheck exit $rc after $took s (124: past the 60 s deadline)"; fi
# The status netcheck's table gives CHECK on SUBJECT ("ok", "FAIL", "warn", "skip", "UNVER"; empty: no record).
status_of() { awk -v check="$1" -v subject="$2" '$2 == check && $3 == subject {print $1; exit}' netcheck.txt; }
port=$SOFTROCE_DEVICE/1
for check in kernel.module_loaded:host/rdma_rxe rdma.link_layer:$port link.state:$port link.mtu:$port \
    link.active_mtu:$port roce.gid.v2_present:$port roce.mode.default:$port roce.tos.default:$port; do
  got=$(status_of ${check%%:*} ${check#*:})
  if [ "$got" = ok ]; then pass "netcheck judged ${check%%:*} ${check#*:}: ok"; else fail "netcheck ${check%%:*} ${check#*:}: '${got}', not ok"; fi
done
for check in roce.trust.dscp roce.pfc.enabled_priorities roce.dscp.priority_map roce.ecn.np_enabled roce.ecn.rp_enabled \
    roce.cnp.dscp roce.cnp.prio; do
  got=$(status_of $check $port)
  # The line after a record's is its reason ("why: ...").
  why=$(awk -v check=$check -v subject=$port '$2 == check && $3 == subject {getline; print; exit}' netcheck.txt)
  case "$got:$why" in
    "skip:"*"why: rxe (soft-RoCE) has no NIC QoS"*) pass "netcheck skipped $check: rxe has no NIC QoS" ;;
    *) fail "netcheck $check: '$got' ($why), not a skip for rxe's lack of NIC QoS" ;;
  esac
done
if grep -q "UNVER" netcheck.txt || ! grep -q " 0 unverified" netcheck.txt; then fail "netcheck left a check unverified"
else pass "netcheck left nothing unverified"; fi

echo "== $failures failure(s)"
[ $failures -eq 0 ] || exit 1
