# Sourced by test bed tests: `netns_test_setup TAG` makes $prefix (unique, 6 characters), $work and
# a private state folder, skips the test (exit 77) without root or network namespaces, and tears
# the test bed down on exit. Needs $bed (netns.sh) set by the caller.
netns_test_setup() {
  prefix=$1$$
  prefix=${prefix:0:6}
  work=$(mktemp -d)
  export ROCEBENCH_NETNS_STATE=$work/state
  if [ "$(id -u)" != 0 ]; then echo "SKIP: emulated hosts need root (network namespaces)"; exit 77; fi
  if ! ip netns add "${prefix}probe" 2>/dev/null; then echo "SKIP: this kernel refuses network namespaces"; exit 77; fi
  ip netns delete "${prefix}probe"
  trap '"$bed" down --prefix "$prefix" >/dev/null 2>&1; rm -rf "$work"' EXIT
}
