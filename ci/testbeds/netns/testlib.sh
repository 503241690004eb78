# Sourced by test bed tests: `netns_test_setup TAG` makes $prefix (unique, 6 characters), $work and
# a private state folder, and tears the test bed down on exit; without root or network namespaces the
# test bed is unavailable (a skip, a failure under CI: ../unavailable.sh). Needs $bed (netns.sh) set by the caller.
. "$(dirname "${BASH_SOURCE[0]}")/../unavailable.sh"
netns_test_setup() {
  prefix=$1$$
  prefix=${prefix:0:6}
  work=$(mktemp -d)
  export ROCEBENCH_NETNS_STATE=$work/state
  if [ "$(id -u)" != 0 ]; then testbed_unavailable "emulated hosts need root (network namespaces)"; fi
  if ! ip netns add "${prefix}probe" 2>/dev/null; then testbed_unavailable "this kernel refuses network namespaces"; fi
  ip netns delete "${prefix}probe"
  trap '"$bed" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$work"' EXIT
}
