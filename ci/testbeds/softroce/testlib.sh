# shellcheck shell=bash
# Sourced by tests of the soft-RoCE bed. `bed_leftovers PID`: what the bed of guest.sh process PID left
# behind, one line each (nothing when it left nothing): its qemus (-name softroce-PID-hostK), its
# namespace (softroce-PID, which held its bridge and taps), and any bridge or tap fallen back into this one.
bed_leftovers() {
  pgrep -af -- "-name softroce-$1-host" || true
  ip netns list | awk -v ns="softroce-$1" '$1 == ns {print "namespace " $1}'
  ip -o link show | grep -E '^[0-9]+: (br0|tap[0-9]+)[:@]' || true
}
