# Judges host 0's records of softroce_hosts_guest.sh's three runs (verbs allreduce across the hosts of a soft-RoCE
# bed, each host starting its own rank by hand; rank 0 writes the records in HOST0_DIR/res-NAME/results.jsonl):
#   sweep:  ring, ps and rd in float32 (in and out of place) and ring in float16, every size's record ok with no
#           wrong element, as many as the sizes give, from a run of WORLD ranks on WORLD hosts;
#   kill:   host 1 killed its rank mid-sweep: one rank.lost event naming rank 1 on host1, rank 0's error
#           naming it, and rank 0's run ended before the deadline (the waits ask the rendezvous);
#   silent: host 1 stopped its rank mid-sweep (SIGSTOP, its connections open): an error record names rank 1
#           on host1 at the verbs transport's deadline, not as lost, and rank 0 failed within twice the
#           deadline.
# One PASS/FAIL line per check; exit 1 on a failure.
#   usage: softroce_hosts_judge.py HOST0_DIR WORLD FAULT_DEADLINE_S
import json, sys
out, world, fault_deadline = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
failures = 0
def check(what, ok):
    global failures
    print(("PASS " if ok else "FAIL ") + what)
    failures += not ok
def records(run):
    try:
        with open(f"{out}/res-{run}/results.jsonl") as f:
            return [json.loads(line) for line in f]
    except (OSError, ValueError) as e:
        check(f"{run}: results.jsonl readable ({e})", False)
        return []

sweep = records("sweep")
run = [r for r in sweep if r["kind"] == "run"]
check(f"sweep: the run record says {world} ranks", len(run) == 1 and run[0].get("world") == world)
hostnames = sorted({h.get("hostname") for h in (run[0].get("hosts", []) if run else [])})
check(f"sweep: the ranks ran on {world} hosts: {hostnames}", hostnames == [f"host{k}" for k in range(world)])
results = [r for r in sweep if r["kind"] == "result" and r["step"] == "collectives.allreduce"]
def sizes(esize):
    unit, got, b = esize * world, [], 4
    while b <= 1 << 20:  # the sweeps' -b 4 -e 1M -f 7
        got.append(max(unit, b // unit * unit))
        b *= 7
    return sorted(set(got))
for algorithm, dtype, esize, placements in [("ring", "float32", 4, 2), ("ps", "float32", 4, 2), ("rd", "float32", 4, 2),
                                            ("ring", "float16", 2, 1)]:
    mine = [r for r in results if r["params"]["algorithm"] == algorithm and r["params"]["dtype"] == dtype]
    want = len(sizes(esize)) * placements
    ok = [r for r in mine if r["status"] == "ok" and r["metrics"].get("wrong") == 0 and r["params"].get("ranks") == world
          and r["params"].get("transport") == "verbs"]
    check(f"sweep: {algorithm} {dtype}: {len(ok)} records ok over verbs with no wrong element, of {len(mine)}; "
          f"{want} sizes x placements expected", len(ok) == want == len(mine))
    for r in [r for r in mine if r not in ok][:3]:
        print(f"  not ok: {json.dumps(r)[:400]}")
odd = [r["params"]["count"] // world for r in results if (r["params"]["count"] // world) % 2 == 1]
check(f"sweep: some sizes give every rank an odd element count ({sorted(set(odd))[:4]} ...)", len(odd) > 0)

times = {}
try:
    with open(f"{out}/times.txt") as f:
        for line in f:
            name, t = line.split()
            times[name] = float(t)
except OSError:
    pass
# The faults: killed, rank 1 is lost at once (its connections close) and recorded so; stopped, nothing
# closes, and rank 0's own deadline must name it, before it is lost.
for fault in ("kill", "silent"):
    records_of = records(fault)
    lost = [r.get("details", {}) for r in records_of if r["kind"] == "event" and r.get("event") == "rank.lost"]
    check(f"{fault}: one rank.lost event, naming rank 1 on host1: {lost}",
          len(lost) == 1 and lost[0].get("rank") == 1 and lost[0].get("host") == "host1")
    errors = [r for r in records_of if r["kind"] == "result" and r["status"] == "error"]
    if fault == "kill":
        reasons = [r.get("reason", "") for r in errors if r.get("rank") == 0]
        check(f"kill: rank 0's error names rank 1 on host host1: {reasons}",
              any("rank 1 on host host1" in reason for reason in reasons))
    else:
        # A stopped rank stalls the ring: the ranks that wait for it name it at their deadline (before host 1
        # kills it, so not as a lost rank), the others name whom they wait for.
        reasons = [f"rank {r.get('rank')}: {r.get('reason', '')}" for r in errors]
        check(f"silent: a rank's error names rank 1 on host host1 at its deadline, not as lost: {reasons}",
              any("deadline passed" in reason and "rank 1 on host host1" in reason and "lost ranks" not in reason
                  for reason in reasons))
    try:
        started = any(line.startswith("# allreduce") for line in open(f"{out}/{fault}.out"))
    except OSError:
        started = False
    check(f"{fault}: rank 0 had started the sweep (its header in {fault}.out) before host 1's signal", started)
    if f"{fault}-go" in times and f"{fault}-named" in times:
        took = times[f"{fault}-named"] - times[f"{fault}-go"]
        check(f"{fault}: rank 0 named rank 1{' or failed' if fault == 'silent' else ''} {took:.1f} s after the go-ahead to "
              f"signal it (at most {2 * fault_deadline:g} s: twice its {fault_deadline:g} s deadline)", took <= 2 * fault_deadline)
    else:
        check(f"{fault}: host 0's times of the {fault} ({times})", False)
# A killed rank is lost to the rendezvous at once, and the waits for it end on that, not at their deadline.
if "kill-go" in times and "kill-end" in times:
    took = times["kill-end"] - times["kill-go"]
    check(f"kill: rank 0's run ended {took:.1f} s after the go-ahead to kill rank 1, before its {fault_deadline:g} s "
          f"deadline", took < fault_deadline)
sys.exit(1 if failures else 0)
