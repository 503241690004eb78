#!/bin/sh
# Runs inside the soft-RoCE guest (ci/testbeds/softroce/guest.sh run, rxe0 up): `rocebench allreduce
# --transport verbs` with 2 and 4 ranks, ring and parameter server, in-place and out-of-place, odd
# sizes and messages larger than the transport's rings, every element checked on every rank; then a
# rank killed mid-sweep must make the others exit 3 naming it. First the transport's own gtests that need a
# device (every algorithm at odd sizes through a small ring, a silent peer named at its deadline, a lost
# rank ending a wait before it): on rxe0 they must run and pass, not skip.
#   usage: verbs_softroce_guest.sh ROCEBENCH COLLECTIVES_TESTS
set -u
bin=$1 gtests=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

rdma link show || fail "no rdma link in the guest"

device_tests=VerbsTransport.EveryAlgorithmSumsExactlyOnARealDevice:VerbsTransport.ASilentPeerIsNamedAtTheDeadline
device_tests=$device_tests:VerbsTransport.ALostRankEndsAWaitBeforeTheDeadline
"$gtests" --gtest_filter="$device_tests" >gtests.out 2>&1
rc=$?
cat gtests.out
if [ $rc -ne 0 ] || grep -q '\[  SKIPPED \]' gtests.out || ! grep -q '\[  PASSED  \] 3 tests' gtests.out; then
  fail "the verbs transport's device gtests (exit $rc): each must run and pass on rxe0"
fi

# One sweep; every record of the step must be ok with wrong = 0, and there must be `want` of them.
sweep() {
  name=$1 want=$2
  shift 2
  "$bin" allreduce --transport verbs --deadline 60 --results-dir "res-$name" "$@" >"$name.out" 2>"$name.err"
  rc=$?
  cat "$name.out"
  if [ $rc -ne 0 ]; then
    fail "$name: exit $rc: $(tail -5 "$name.err")"
    return
  fi
  ok=$(grep '"step":"collectives.allreduce"' "res-$name/results.jsonl" | grep -c '"status":"ok"')
  bad=$(grep '"step":"collectives.allreduce"' "res-$name/results.jsonl" | grep -vc '"status":"ok"')
  wrong=$(grep '"step":"collectives.allreduce"' "res-$name/results.jsonl" | grep -Evc '"wrong":0(\.0)?[,}]')
  [ "$ok" -eq "$want" ] || fail "$name: $ok ok records, expected $want"
  [ "$bad" -eq 0 ] || fail "$name: $bad records not ok: $(grep -v '"status":"ok"' "res-$name/results.jsonl" | grep collectives | head -2)"
  [ "$wrong" -eq 0 ] || fail "$name: records with wrong elements"
}

# Sizes 4, 28, 196, 1372, 9604, 67228, 470596 and 3294172 bytes, each rounded to whole segments:
# odd element counts, below and above one 256 KiB ring slot.
for ranks in 2 4; do
  records=16  # 8 sizes x in/out of place; with 4 ranks 4 and 28 bytes both round to 16
  [ "$ranks" -eq 4 ] && records=14
  for algorithm in ring ps; do
    sweep "r${ranks}-${algorithm}" "$records" --ranks "$ranks" --algorithm "$algorithm" -b 4 -e 4M -f 7 -w 1 -n 2
  done
done
# One message of 10 MiB (parameter-server shards of 2 ranks) is more than the 4 MiB ring: credits must flow.
sweep "big-ps" 2 --ranks 2 --algorithm ps -b 20M -e 20M -w 0 -n 1
sweep "rd-odd" 2 --ranks 4 --algorithm rd -b 1000 -e 1000 -w 1 -n 3

# A rank killed mid-sweep: the others exit 3 within the deadline naming it.
cat >kill-plan.json <<'EOF'
{"name": "kill", "steps": [{"step": "collectives.allreduce", "params": {"transport": "verbs", "min_bytes": 65536,
  "max_bytes": 65536, "factor": 1, "iters": 1000000, "warmup": 0, "placement": "in"}}]}
EOF
port=29517
for r in 0 1 2; do
  RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port ROCEBENCH_TOKEN=tok \
    "$bin" run --launcher env --plan kill-plan.json --results-dir res-kill --deadline 10 >"kill$r.out" 2>"kill$r.err" &
  eval "pid$r=$!"
done
# Rank 0 prints the sweep's header as it starts it.
i=0
while ! grep -q '^# allreduce' kill0.out 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 "$pid1"
for r in 0 2; do
  eval "wait \$pid$r"
  rc=$?
  [ $rc -eq 3 ] || fail "kill: rank $r exited $rc, expected 3: $(tail -3 "kill$r.err")"
  grep -q "rank 1 on host" "kill$r.err" || fail "kill: rank $r does not name rank 1: $(tail -3 "kill$r.err")"
  echo "kill: rank $r exit $rc: $(grep -m1 'rank 1 on host' "kill$r.err")"
done
wait "$pid1" 2>/dev/null

echo "verbs soft-RoCE guest: $failures failure(s)"
[ $failures -eq 0 ]
