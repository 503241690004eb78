# Runs in each host of a soft-RoCE bed (ci/testbeds/softroce/guest.sh run --hosts N [--rate-of SLOW=R] THIS OUT --
# ROCEBENCH LIB TOKEN SLOW [RANKS_BY_HAND FAULT_DEADLINE]): every host sets rdma_cm's default ToS to the lossless profile's DSCP 26 (as an operator
# would) and starts `rocebench agent` on its address; host 0 then drives the whole bed through the agents (a hosts
# file with agent=PORT), as an operator's node would drive a cluster:
#   accept --quick with a profile whose transport is verbs: every host's netcheck reads its own rxe0, the link
#     stage measures each host with its ring neighbours over verbs, and host SLOW (its link shaped down) is
#     named LINK, and only it; `report --accept` judges the records again to the same table;
#   the verbs all-pairs matrix (microbench.allpairs, every pair): host SLOW's pairs, and only they, fail;
#   train --engine replay --world-sizes 1,2,N --transport verbs: data-parallel training over RC queue pairs
#     across the hosts, a record per world size; at N ranks the ring crosses host SLOW's shaped link (its tbf
#     drops: the transport's ACK timeout outlasts the shaper's queue, so the queue pairs resend, not give up);
#   train --engine cpu --model cnn_cifar --check over all N hosts, with rank 0 on host 1: k ranks of batch b
#     end with the weights of one rank trained on k·b (the data-parallel correctness test, over verbs across
#     hosts); rank 0 reads the plan and writes the records in a copy of host 0's results folder that the
#     agents carry to host 1 and back (host 1 does not see host 0's /tmp).
# Each host checks that its agent ends on SIGTERM with no child left. Then, given RANKS_BY_HAND (collectives'
# softroce_hosts_guest.sh), every host runs it on the same bed, its ranks started by hand as mpirun would, with
# FAULT_DEADLINE (one boot for both: CI time). One PASS/FAIL line per check.
RB=$1
. "$2"
export ROCEBENCH_AGENT_TOKEN=$3
SLOW=$4
. "$(dirname "$2")/agents.sh"
agents_up
# The runs write into the guest's own /tmp (tmpfs): netcheck's capture of sysfs, thousands of small files,
# crawls over the 9p share of the working directory under TCG (over 5 minutes for one host).
if [ "$SOFTROCE_HOST" = 0 ]; then
  cat >verbs-profile.json <<JSON
{"name": "softroce-verbs", "transport": "verbs", "rdma_required": true,
 "link": {"test": "bw", "bytes": 65536, "duration_s": 1, "fraction_of_best": 0.35},
 "sources": {"link.fraction_of_best": "the bed's links under TCG carry 0.06-0.14 Gb/s from pair to pair and run to run; host $SLOW's is shaped to a sixth of the best"}}
JSON
  start=$(date +%s)
  "$RB" accept --quick --netns hosts-agents --profile verbs-profile.json --results-dir /tmp/acc --deadline 120 >accept.out 2>&1
  rc=$?
  cat accept.out
  echo "accept --quick took $(($(date +%s) - start)) s"
  if [ $rc = 1 ]; then pass "accept --quick over verbs through the agents: exit 1 (a node failed)"; else fail "accept --quick: exit $rc, not 1"; fi
  /usr/bin/python3 - /tmp/acc "$world" "$SLOW" <<'PY' && pass "host$SLOW alone is LINK; every host's netcheck read its rxe0; the links went over verbs" || fail "the acceptance's records"
import glob, json, sys
acc, world, slow = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
verdict = json.load(open(f"{acc}/accept.json"))
codes = {n["host"]: sorted({f["code"] for f in n["findings"]}) for n in verdict["nodes"]}
want = {f"host{k}": (["LINK"] if k == slow else []) for k in range(world)}
print("codes:", codes)
def records(stage):
    return [json.loads(l) for f in sorted(glob.glob(f"{acc}/stages/*-{stage}/results.jsonl")) for l in open(f)]
checks = [r for r in records("hosts") if r.get("kind") == "check"]
read_rxe = {r["host"] for r in checks if r["check"] == "rdma.link_layer" and r["subject"] == "rxe0/1" and r["status"] == "ok"}
print("hosts whose netcheck judged rxe0's link layer:", sorted(read_rxe))
links = [r for r in records("links") if r.get("step") == "microbench.allpairs" and r.get("kind") == "result" and "src" in r["params"]]
print("links:", sorted({(r["params"]["src"], r["params"]["dst"], r["params"]["transport"], r["status"]) for r in links}))
sys.exit(not (codes == want and len(read_rxe) == world and links and all(r["params"]["transport"] == "verbs" for r in links)))
PY
  sed -n '/^host /,/^cluster: /p' accept.out >accept.table
  "$RB" report --accept /tmp/acc >rejudged.out 2>&1
  rc=$?
  if [ $rc = 1 ] && sed -n '/^host /,/^cluster: /p' rejudged.out | diff accept.table -; then
    pass "report --accept judges the records again: the same table, exit 1"
  else
    fail "report --accept: exit $rc, or another table"
  fi

  # The whole verbs matrix, every pair (accept --quick measured ring neighbours only): the pairs with host SLOW,
  # and only they, fail, and the summary names host SLOW alone (at 0.35 of the best pair, as the profile above).
  cat >allpairs.json <<JSON
{"name": "softroce-allpairs", "steps": [{"step": "microbench.allpairs",
 "params": {"transport": "verbs", "test": "write_bw", "bytes": 65536, "duration_s": 1, "bw_fraction": 0.35}}]}
JSON
  start=$(date +%s)
  "$RB" run allpairs.json --netns hosts-agents --ranks "$world" --results-dir /tmp/softroce-matrix --deadline 120 >allpairs.out 2>&1
  rc=$?
  grep -E "all pairs|bad hosts|^  fail" allpairs.out
  echo "the matrix took $(($(date +%s) - start)) s"
  if [ $rc = 1 ]; then pass "the verbs matrix across $world hosts: exit 1 (a pair failed)"; else fail "the verbs matrix: exit $rc, not 1"; tail -20 allpairs.out; fi
  /usr/bin/python3 - /tmp/softroce-matrix/results.jsonl "$world" "$SLOW" <<'PY' && pass "every pair measured over verbs; host$SLOW's pairs fail, the others pass, the summary names host$SLOW alone" || fail "the matrix's records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
world, slow = int(sys.argv[2]), f"host{sys.argv[3]}"
pairs = [r for r in records if r.get("step") == "microbench.allpairs" and r.get("kind") == "result" and "src" in r["params"]]
summary = [r for r in records if r.get("step") == "microbench.allpairs" and r["params"].get("summary")]
for r in sorted(pairs, key=lambda r: (r["params"]["src"], r["params"]["dst"])):
    print(f'  {r["params"]["src"]} -> {r["params"]["dst"]} over {r["params"]["transport"]}: {r["metrics"].get("bw_avg_Gbps", 0):.4f} Gb/s {r["status"]}')
verdict = {(r["params"]["src"], r["params"]["dst"]): r["status"] for r in pairs}
want = {(a, b): "fail" if slow in (a, b) else "ok" for (a, b) in verdict}
print("summary:", [(s["status"], s["params"].get("bad_hosts")) for s in summary])
sys.exit(not (len(pairs) == world * (world - 1) // 2 and all(r["params"]["transport"] == "verbs" for r in pairs)
              and verdict == want and len(summary) == 1 and summary[0]["params"].get("bad_hosts") == [slow]))
PY

  start=$(date +%s)
  "$RB" train --netns hosts-agents --engine replay --model resnet20_cifar --timeline cpu-resnet20_cifar-fp32-b16 --batch 16 \
    --iters 3 --warmup 1 --world-sizes 1,2,$world --sync ring --transport verbs --results-dir /tmp/train --deadline 120 >train.out 2>&1
  rc=$?
  cat train.out
  echo "train took $(($(date +%s) - start)) s"
  if [ $rc = 0 ]; then pass "train --transport verbs across $world hosts: exit 0"; else fail "train --transport verbs: exit $rc"; fi
  /usr/bin/python3 - /tmp/train/results.jsonl "$world" <<'PY' && pass "a models.scaling record per world size, over verbs, ok" || fail "the training records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
world = int(sys.argv[2])
scaling = [r for r in records if r.get("step") == "models.scaling" and r.get("kind") == "result"]
got = sorted((r["params"].get("ranks", 0), r["params"].get("transport"), r["status"]) for r in scaling)
print("models.scaling:", got)
sys.exit(got != sorted((n, "verbs", "ok") for n in (1, 2, world)))
PY

  # Data parallelism checked exact where the ranks really are: each host trains its slice of one batch
  # over verbs, and its weights must match one engine's trained on the whole batch (train --check). Rank 0
  # runs on host 1, which does not see host 0's files (the plan train writes in /tmp, the results folder).
  { sed -n 2p hosts-agents; sed -n '1p;3,$p' hosts-agents; } >hosts-rank0-on-host1
  start=$(date +%s)
  "$RB" train --netns hosts-rank0-on-host1 --engine cpu --model cnn_cifar --batch 2 --iters 1 --warmup 0 --world-sizes $world \
    --sync ring --check --transport verbs --results-dir /tmp/check --deadline 120 >check.out 2>&1
  rc=$?
  cat check.out
  echo "train --check took $(($(date +%s) - start)) s"
  if [ $rc = 0 ] && grep -q "check: the $world ranks' weights match one rank's trained on the whole batch" check.out; then
    pass "train --check --transport verbs across $world hosts: the weights of one rank on the whole batch"
  else
    fail "train --check --transport verbs: exit $rc"
  fi
  /usr/bin/python3 - /tmp/check/results.jsonl <<'PY' && pass "rank 0 on host1: its records came back to host 0's results folder" || fail "rank 0 on host1: its records"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1])]
run = records[0] if records and records[0].get("kind") == "run" else {}
checked = [r for r in records if r.get("step") == "models.scaling" and "weights_rel_diff_max" in r.get("metrics", {})]
print("run record's plan file:", run.get("plan", {}).get("file"), "; checked records:", len(checked))
sys.exit(not (run and checked and all(r["status"] == "ok" for r in checked)))
PY
  mkdir -p kept/acc && cp -r /tmp/acc/accept.* /tmp/acc/stages kept/acc/ && cp /tmp/train/results.jsonl kept/train.jsonl && cp /tmp/softroce-matrix/results.jsonl kept/allpairs.jsonl
fi
agents_end
if [ -n "${5:-}" ]; then
  sh "$5" "$RB" "$2" "$ROCEBENCH_AGENT_TOKEN" "$6" || failures=$((failures + 1))
fi
[ $failures -eq 0 ]
