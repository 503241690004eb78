#!/usr/bin/env bash
# Emulated hosts: N network namespaces on a private bridge, each link rate-limited both ways.
#
#   netns.sh up N [--rate 1gbit] [--burst 128kb] [--prefix rbh] [--subnet 10.77.0] [--rate-of I=RATE]...
#   netns.sh down [--prefix rbh]
#   netns.sh hosts [--prefix rbh]      print the hosts file (NETNS ADDRESS per line)
#
# Host i is namespace <prefix><i> with address <subnet>.<i+1>/24 on eth0. The bridge has no
# address in the root namespace, so the test bed cannot reach anything outside itself. Each link is
# shaped both ways by ../link.sh (egress of eth0 inside the host, egress of the bridge-side veth
# towards it): tbf, TSO/GSO/GRO off, RPS; why, with the measurements, is in that file.
# `rocebench run --netns $(netns.sh hosts)` starts rank i in host i. Needs root.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../link.sh"

state_root=${ROCEBENCH_NETNS_STATE:-/run/rocebench-netns}
prefix=rbh
rate=1gbit
subnet=10.77.0
declare -A rate_of=()

die() { echo "netns.sh: $*" >&2; exit 2; }

parse_options() {
  while (($#)); do
    case $1 in
      --prefix) prefix=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      --burst) link_burst=$2; shift 2 ;;
      --subnet) subnet=$2; shift 2 ;;
      --rate-of) rate_of[${2%%=*}]=${2#*=}; shift 2 ;;
      *) die "unknown option $1" ;;
    esac
  done
  [[ $prefix =~ ^[a-z][a-z0-9]{0,5}$ ]] || die "--prefix must be 1-6 lowercase letters/digits (interface names are short)"
  link_check_rate --rate "$rate"
  local host
  for host in "${!rate_of[@]}"; do link_check_rate "--rate-of $host" "${rate_of[$host]}"; done
}

down() {
  local dir=$state_root/$prefix
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${prefix}[0-9]+$" || true); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
    # The host's link first: deleting a namespace frees the veth inside it later, in the kernel's
    # cleanup work, and an immediate bring-up then found the bridge-side name still taken.
    ip link delete "${ns}h" 2>/dev/null || true
    ip netns delete "$ns"
  done
  ip link delete "${prefix}-br" 2>/dev/null || true
  rm -rf "$dir"
}

up() {
  local n=$1
  [[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 200)) || die "N must be 1..200"
  local host
  for host in "${!rate_of[@]}"; do link_check_host --rate-of "$host" "$n"; done
  command -v tc >/dev/null || die "tc (iproute2) is missing: run ci/setup.sh"
  down  # a previous bed of the same prefix, even a half-built one
  trap 'echo "netns.sh: bring-up failed; tearing down" >&2; down' ERR
  local dir=$state_root/$prefix
  mkdir -p "$dir"
  ip link add "${prefix}-br" type bridge
  ip link set "${prefix}-br" up
  : >"$dir/hosts"
  for ((i = 0; i < n; i++)); do
    local ns=$prefix$i outside=${prefix}${i}h inside=${prefix}${i}n address=$subnet.$((i + 1))
    local link_rate=${rate_of[$i]:-$rate}
    ip netns add "$ns"
    ip link add "$outside" type veth peer name "$inside"
    ip link set "$inside" netns "$ns"
    ip -n "$ns" link set "$inside" name eth0
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set lo up
    ip -n "$ns" link set eth0 up
    ip link set "$outside" master "${prefix}-br"
    ip link set "$outside" up
    link_shape eth0 "$link_rate" "$ns"
    link_shape "$outside" "$link_rate"
    echo "$ns $address" >>"$dir/hosts"
  done
  trap - ERR
  echo "$dir/hosts"
}

cmd=${1:-}
shift || true
case $cmd in
  up) count=${1:-}; shift || true; parse_options "$@"; up "$count" ;;
  down) parse_options "$@"; down ;;
  hosts) parse_options "$@"; echo "$state_root/$prefix/hosts" ;;
  *) sed -n '2,12p' "$0"; exit 2 ;;
esac
