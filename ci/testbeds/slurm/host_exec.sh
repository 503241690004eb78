#!/usr/bin/env bash
# Runs a command "on" an emulated host of ci/testbeds/netns: in its network namespace, in a UTS
# namespace of its own whose hostname is the host's name, and with the test bed's /etc/hosts (every
# host's name -> address, as a cluster's DNS would give) bound over /etc/hosts.
#
#   host_exec.sh HOST COMMAND [ARG]...     HOST: a namespace name or its address
#   host_exec.sh --rsh HOST WORDS...       remote-shell form (mpirun's plm_rsh_agent): WORDS are joined
#                                          with spaces and run by sh -c, as ssh does
#
# Needs ROCEBENCH_TESTBED_HOSTS: the netns test bed's hosts file ("NETNS ADDRESS" lines); the /etc/hosts
# it binds is `etc-hosts` beside it (written on first use). Needs root.
set -euo pipefail

rsh=0
if [ "${1:-}" = --rsh ]; then rsh=1; shift; fi
(($# >= 2)) || { sed -n '2,12p' "$0" >&2; exit 2; }
hosts=${ROCEBENCH_TESTBED_HOSTS:?ROCEBENCH_TESTBED_HOSTS must name the test bed hosts file}
etc_hosts=$(dirname "$hosts")/etc-hosts
target=$1
shift

# The cluster's names as DNS would give them, written once beside the hosts file.
if [ ! -s "$etc_hosts" ]; then
  { echo "127.0.0.1 localhost"; awk '{print $2, $1}' "$hosts"; } >"$etc_hosts.$$"
  mv -f "$etc_hosts.$$" "$etc_hosts"
fi
ns=$(awk -v h="$target" '$1 == h || $2 == h {print $1; exit}' "$hosts")
[ -n "$ns" ] || { echo "host_exec.sh: no emulated host '$target' in $hosts" >&2; exit 255; }

if ((rsh)); then set -- sh -c "$*"; fi
# nsenter, not ip netns exec: that one mounts the namespace's own sysfs over /sys, which hides the
# cgroup mounts under /sys/fs/cgroup that slurmd needs. The mount namespace is the command's own, so
# the bind stays with it.
exec nsenter --net="/run/netns/$ns" unshare --mount --propagation private --uts sh -c 'hostname "$1" && mount --bind "$2" /etc/hosts && shift 2 && exec "$@"' \
  host_exec "$ns" "$etc_hosts" "$@"
