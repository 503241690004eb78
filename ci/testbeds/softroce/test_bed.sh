#!/usr/bin/env bash
# CTest softroce_bed: the multi-host soft-RoCE bed (guest.sh run --hosts) judged like code. Bad input: exit 2
# naming the flag, without a boot. A guest that dies mid-SCRIPT: guest.sh exits 3 naming that host (the
# others' exit codes kept). guest.sh stopped (TERM) while its guests run: it exits and nothing of the bed
# (qemu, namespace, bridge, tap) is left. When no guest can boot here: skipped (77), failed under CI.
#   usage: test_bed.sh [OUTDIR]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
guest=$here/guest.sh
. "$here/../unavailable.sh"
. "$here/testlib.sh"
out=${1:-}
bed_outdir "$out"

echo "== bad input: exit 2, naming the flag (nothing boots)"
echo true >"$out/true.sh"
bad_input() {  # bad_input WHAT_IT_SAYS ARGS...
  local said rc
  said=$("$guest" run "${@:2}" "$out/true.sh" 2>&1); rc=$?
  [[ $rc == 2 && $said == *"$1"* ]] || { echo "  exit $rc: $said"; return 1; }
}
check "--hosts 0" bad_input "--hosts '0'" --hosts 0
check "--hosts two" bad_input "--hosts 'two'" --hosts two
check "--rate 0mbit" bad_input "--rate '0mbit'" --hosts 2 --rate 0mbit
check "--rate 1gb (tc has no such unit)" bad_input "--rate '1gb'" --hosts 2 --rate 1gb
check "--rate-of 1=fast" bad_input "--rate-of 1 'fast'" --hosts 2 --rate-of 1=fast
check "--rate-of for host 2 of 2" bad_input "--rate-of: there is no host '2'" --hosts 2 --rate-of 2=1gbit
check "--loss-of for host 3 of 2" bad_input "--loss-of: there is no host '3'" --hosts 2 --loss-of 3=1
check "--loss-of 1=150" bad_input "--loss-of 1 '150'" --hosts 2 --loss-of 1=150
check "--rate without --hosts" bad_input "--rate needs --hosts" --rate 1gbit

why=$("$guest" check --hosts 2>&1) || testbed_unavailable "${why:-guest.sh check --hosts: no soft-RoCE bed can boot here}"
echo "$why"
export SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-240}

echo "== host 1 powers off mid-SCRIPT"
cat >"$out/dies.sh" <<'SCRIPT'
echo started
[ "$SOFTROCE_HOST" = 1 ] && busybox poweroff -f
sleep 1
SCRIPT
"$guest" run --hosts 2 "$out/dies.sh" "$out/dies" >"$out/dies.log" 2>&1 &
bed=$!
wait $bed
rc=$?
check "guest.sh exits 3 (got $rc)" test $rc = 3
check "it names host 1: $(grep 'host 1' "$out/dies.log" | head -1)" grep -q "host 1 ended without finishing SCRIPT" "$out/dies.log"
check "host 0 finished, exit code 0" test "$(cat "$out/dies/host0/exit_code" 2>/dev/null)" = 0
left=$(bed_leftovers $bed)
check "nothing of the bed is left${left:+: $left}" test -z "$left"

echo "== guest.sh stopped (TERM) while both guests run SCRIPT"
printf 'echo started\nsleep 600\n' >"$out/sleeps.sh"
"$guest" run --hosts 2 "$out/sleeps.sh" "$out/sleeps" >"$out/sleeps.log" 2>&1 &
bed=$!
for ((i = 0; i < 1200; i++)); do  # both guests up: 240 s at most
  grep -qs started "$out/sleeps/host0/script.log" && grep -qs started "$out/sleeps/host1/script.log" && break
  kill -0 $bed 2>/dev/null || break
  sleep 0.2
done
check "both guests started SCRIPT" grep -qs started "$out/sleeps/host1/script.log"
# The check below can fail: while the bed runs, bed_leftovers sees both qemus and the namespace.
check "while the bed runs, its 2 qemus and namespace are seen" test "$(bed_leftovers $bed | wc -l)" -ge 3
start=$SECONDS
kill -TERM $bed
wait $bed
rc=$?
check "guest.sh exits 143 at TERM (got $rc, after $((SECONDS - start)) s)" test $rc = 143
left=$(bed_leftovers $bed)
check "nothing of the bed is left${left:+: $left}" test -z "$left"
echo "== $failures failure(s)"
((failures == 0))
