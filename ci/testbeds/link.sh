# shellcheck shell=bash
# The emulated link model, shared by the test beds (source it; bash): ci/testbeds/netns shapes veths
# with it, ci/testbeds/softroce --hosts shapes the taps between its guests and each guest's eth0.
#
#   link_check_rate FLAG RATE       exit 2 naming FLAG unless tc's tbf takes RATE (e.g. 1gbit, 200mbit)
#   link_check_loss FLAG PERCENT    exit 2 naming FLAG unless PERCENT is a loss netem takes (0-100, e.g. 0.5)
#   link_check_host FLAG K N        exit 2 naming FLAG unless host K is one of 0..N-1
#   link_shape DEV RATE [NETNS] [LOSS]
#       one direction of a link: DEV's egress limited to RATE by tbf (burst $link_burst, latency 50 ms),
#       and where LOSS (percent) is given and not 0, netem dropping that share of packets under it.
#   link_ingress_loss DEV LOSS [NETNS]
#       netem drops LOSS percent of what DEV receives (redirected through an ifb); nothing when LOSS is
#       0. For a link whose other end cannot run netem (the soft-RoCE bed's host kernel has no sch_netem).
#
# Why this shape (measured on the netns bed): TSO, GSO and GRO are off so that the shaper sees real
# packets and small messages are not let through in bursts. 64 kB of burst costs ~1,000 TCP
# retransmits per 3 s and ~890 Mbit/s at 1gbit; 128 kB (1 ms at 1 Gbit/s) gives ~960 Mbit/s with
# none. RPS on every link keeps a flow's packets in order: without it, 4 iperf3 flows at once around
# 4 hosts each retransmitted ~2,000 segments per 10 s (spurious, from reordering) and carried
# 0.113-0.116 GB/s against 0.1195 for one flow alone; with it, none and 0.118-0.119.
link_burst=${link_burst:-128kb}

link_die() { echo "${0##*/}: $*" >&2; exit 2; }

link_check_rate() {
  # tc's units (bit, kbit, mbit, gbit, tbit; bps... for bytes), case as tc reads them; a bare number is bit/s.
  [[ ${2,,} =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?bit|[kmgt]?bps)?$ ]] &&
    awk -v v="${BASH_REMATCH[1]}" 'BEGIN { exit !(v > 0) }' ||
    link_die "$1 '$2' is not a rate tc takes (a positive number with bit, kbit, mbit, gbit, tbit or kbps... e.g. 1gbit)"
}

link_check_loss() {
  [[ $2 =~ ^[0-9]+(\.[0-9]+)?%?$ ]] && awk -v v="${2%\%}" 'BEGIN { exit !(v <= 100) }' ||
    link_die "$1 '$2' is not a loss in percent (0 to 100, e.g. 0.5)"
}

link_check_host() {
  [[ $2 =~ ^[0-9]+$ ]] && (($2 < $3)) || link_die "$1: there is no host '$2' (hosts are 0..$(($3 - 1)))"
}

# Every online CPU, as rps_cpus takes it: hex, comma-separated in 32-bit groups.
link_all_cpus_mask() {
  local n mask=""
  n=$(nproc --all)
  while ((n > 0)); do
    local bits=$((n < 32 ? n : 32))
    mask=$(printf '%x' $(((1 << bits) - 1)))${mask:+,$mask}
    n=$((n - bits))
  done
  echo "$mask"
}

link_shape() {  # link_shape DEV RATE [NETNS] [LOSS]
  local run=() loss=${4:-0}
  [ -n "${3:-}" ] && run=(ip netns exec "$3")
  "${run[@]}" tc qdisc replace dev "$1" root handle 1: tbf rate "$2" burst "$link_burst" latency 50ms
  if awk -v v="${loss%\%}" 'BEGIN { exit !(v > 0) }'; then
    "${run[@]}" tc qdisc replace dev "$1" parent 1:1 handle 10: netem loss "${loss%\%}%"
  fi
  "${run[@]}" ethtool -K "$1" tso off gso off gro off >/dev/null 2>&1 || true
  # RPS keeps each flow on one CPU, as a NIC's RSS does; without it veth hands a flow's packets to
  # whichever CPU dequeued them and TCP sees them reordered (see the header).
  local queue mask
  mask=$(link_all_cpus_mask)
  for queue in $("${run[@]}" sh -c "ls -d /sys/class/net/$1/queues/rx-*"); do
    "${run[@]}" sh -c "echo $mask > $queue/rps_cpus"
  done
}

link_ingress_loss() {  # link_ingress_loss DEV LOSS [NETNS]
  local run=() loss=${2%\%}
  awk -v v="$loss" 'BEGIN { exit !(v > 0) }' || return 0
  [ -n "${3:-}" ] && run=(ip netns exec "$3")
  "${run[@]}" ip link add "ifb-$1" type ifb
  "${run[@]}" ip link set "ifb-$1" up
  "${run[@]}" tc qdisc replace dev "$1" handle ffff: ingress
  "${run[@]}" tc filter replace dev "$1" parent ffff: matchall action mirred egress redirect dev "ifb-$1"
  "${run[@]}" tc qdisc replace dev "ifb-$1" root netem loss "$loss%"
}
