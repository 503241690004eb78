#!/usr/bin/env bash
# RoCE across hosts: boots a bed of 4 soft-RoCE hosts (ci/testbeds/softroce/guest.sh run --hosts 4), host 3's link
# shaped to SLOW_RATE, and runs softroce_agents_guest.sh in every host. First rocebench drives the bed itself:
# each host starts `rocebench agent`, and host 0 drives the others through them (a hosts file with agent=PORT):
# `accept --quick` over verbs names host 3, and only it, LINK, after every host's netcheck read its rxe0;
# `report --accept` judges the same; the verbs all-pairs matrix fails host 3's pairs alone; `train --transport
# verbs` at 1, 2 and 4 ranks and `train --check` at 4. Then, on the same bed, each host starts its own rank by
# hand (collectives' softroce_hosts_guest.sh): verbs allreduce sweeps and a killed and a stopped peer, host 0's
# records judged by collectives' softroce_hosts_judge.py. Then: nothing the bed started is left. When no guest
# can boot here: skipped (77), failed under CI.
#   usage: test_verbs_softroce_agents.sh ROCEBENCH SOFTROCE_DIR [OUTDIR]
set -uo pipefail
rocebench=$(realpath "$1") softroce=$(cd "$2" && pwd) out=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
hosts=4 slow=3 slow_rate=${SLOW_RATE:-20mbit}
collectives=$here/../../collectives/tests
fault_deadline=20  # every wait of the fault runs (10 s was too short for rocebench's start at load 12)
. "$softroce/../unavailable.sh"
. "$softroce/testlib.sh"
bed_outdir "$out"

why=$("$softroce/guest.sh" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
token=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
bed_links=(--rate-of "$slow=$slow_rate")
SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-720} host_bed $hosts "$softroce" "$here/softroce_agents_guest.sh" "$rocebench" \
  "$softroce/lib.sh" "$token" $slow "$collectives/softroce_hosts_guest.sh" $fault_deadline
check "host 0's allreduce records, its ranks started by hand" python3 "$collectives/softroce_hosts_judge.py" "$out/host0" \
  $hosts $fault_deadline
for ((k = 0; k < hosts; k++)); do echo "host $k (seconds of guest uptime): $(tr '\n' ' ' <"$out/host$k/times.txt" 2>/dev/null)"; done
echo "== $failures failure(s)"
((failures == 0))
