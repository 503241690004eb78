# shellcheck shell=bash
# Sourced by tests of the soft-RoCE bed. `bed_leftovers PID`: what the bed of guest.sh process PID left
# behind, one line each (nothing when it left nothing): its qemus (-name softroce-PID-hostK), its
# namespace (softroce-PID, which held its bridge and taps), and any bridge or tap fallen back into this one.
bed_leftovers() {
  pgrep -af -- "-name softroce-$1-host" || true
  ip netns list | awk -v ns="softroce-$1" '$1 == ns {print "namespace " $1}'
  ip -o link show | grep -E '^[0-9]+: (br0|tap[0-9]+)[:@]' || true
}

# `bed_outdir [OUTDIR]`: sets $out, where a test's guests write: OUTDIR emptied (nothing of an earlier
# run is left to be judged), else a temporary folder removed on exit.
bed_outdir() {
  out=${1:-}
  if [[ -z $out ]]; then
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
  else
    rm -rf "$out" && mkdir -p "$out"
  fi
}

# `check DESCRIPTION COMMAND...`: PASS or FAIL DESCRIPTION by COMMAND's exit code, counted in $failures.
failures=0
check() {
  if "${@:2}"; then echo "PASS $1"; else echo "FAIL $1"; failures=$((failures + 1)); fi
}

# `host_bed HOSTS SOFTROCE_DIR SCRIPT ARGS...`: runs SCRIPT ARGS... on a bed of HOSTS hosts writing into $out
# (bed_outdir), the links shaped by the guest.sh options in the array `bed_links` (e.g. --rate-of 3=20mbit;
# none when unset), then checks that every host's script passed and that nothing of the bed is left.
host_bed() {
  local hosts=$1 softroce=$2 script=$3 start=$SECONDS rc bed left code k
  shift 3
  SOFTROCE_DEADLINE_S=${SOFTROCE_DEADLINE_S:-540} "$softroce/guest.sh" run --hosts "$hosts" ${bed_links[@]+"${bed_links[@]}"} \
    "$script" "$out" -- "$@" &
  bed=$!
  wait $bed
  rc=$?
  echo "the bed ran $((SECONDS - start)) s"
  if [ $rc = 124 ]; then  # past its deadline: where each host was, before the temporary folder goes
    for ((k = 0; k < hosts; k++)); do
      echo "== host $k at the deadline: its script's last lines, then its console's"
      tail -n 15 "$out/host$k/script.log" 2>/dev/null
      tail -n 5 "$out/host$k/console.log" 2>/dev/null | tr -d '\r' | cut -c1-200
    done
  fi
  check "host 0's checks pass (guest.sh exit $rc)" test $rc = 0
  for ((k = 1; k < hosts; k++)); do
    code=$(cat "$out/host$k/exit_code" 2>/dev/null)
    check "host $k's checks pass (its exit code ${code:-none})" test "$code" = 0
  done
  left=$(bed_leftovers $bed)
  check "nothing of the bed is left (qemu, namespace, bridge, tap)${left:+: $left}" test -z "$left"
}
