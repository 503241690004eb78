#!/usr/bin/env bash
# Soft-RoCE test bed: a qemu guest (TCG, no KVM needed) running Debian's 6.1 kernel with rdma_rxe.
#
#   guest.sh prepare                      fetch and unpack the guest kernel (needs apt; ci/setup.sh runs it)
#   guest.sh check [--hosts]              exit 0 when a guest (--hosts: a bed of them) can boot here, else
#                                         print why and exit 77
#   guest.sh run SCRIPT [OUTDIR] [-- ARGS...]
#       boots a guest whose root is this host's root filesystem (read-only over virtio-9p), brings up
#       rxe0 on dummy0 (10.0.0.1/24; its RoCE v2 GID is index 1), runs `sh SCRIPT ARGS...` in it with
#       the working directory OUTDIR (writable, shared back), and exits with SCRIPT's exit code.
#       SCRIPT's output goes to stdout and OUTDIR/script.log, the guest console to OUTDIR/console.log.
#       Everything is bounded by $SOFTROCE_DEADLINE_S (default 600 s): a hung guest is killed (exit 124).
#   guest.sh run --hosts N [--rate R] [--rate-of K=R]... [--loss-of K=P]... SCRIPT [OUTDIR] [-- ARGS...]
#       N emulated RoCE hosts, one guest each (rxe works only in the initial network namespace, see
#       README.md), joined by taps on a bridge inside a network namespace of the bed's own. Host K is named
#       hostK (its hostname, as in the hosts file) and has eth0 with 10.78.0.<K+1>/24 and rxe0 on it; its link is shaped by ../link.sh both ways (tbf at R,
#       default 1gbit; netem loss P percent where asked). Each runs SCRIPT with SOFTROCE_HOST=K and
#       SOFTROCE_HOSTS (a hosts file: "hostK ADDRESS" per line) in OUTDIR/hostK; guest.sh exits with host
#       0's exit code (each host's in OUTDIR/hostK/exit_code), 3 naming the host where one did not finish
#       SCRIPT, 124 where one ran past the deadline. Nothing it starts (qemu, namespace, bridge, tap)
#       outlives it.
#
# Environment: SOFTROCE_CACHE (default /var/cache/rocebench-softroce), SOFTROCE_CPUS (vCPUs per guest; one
# guest: 4, as with 2 busy-polling peers starve rxe's kernel work; --hosts: 2 (bed_cpus_default), one peer per
# guest, see README.md), SOFTROCE_MEM (2048 MiB per guest), SOFTROCE_DEADLINE_S.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../link.sh"

cache=${SOFTROCE_CACHE:-/var/cache/rocebench-softroce}
cpus=${SOFTROCE_CPUS:-}
mem=${SOFTROCE_MEM:-2048}
deadline_s=${SOFTROCE_DEADLINE_S:-600}

# In this order (what `modprobe --show-depends` gives, crc32_generic being rdma_rxe's soft dependency).
modules=(crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe configfs ib_cm iw_cm rdma_cm rdma_ucm
  virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet 9pnet_virtio netfs fscache 9p dummy)
# A bed host's also: its NIC (virtio_net) and the link model (tbf; netem, and ifb for loss on the way in).
bed_modules=(failover net_failover virtio_net sch_tbf sch_netem ifb sch_ingress act_mirred cls_matchall)
# The one guest's also: what ci/testbeds/netns needs (veth, bridge, tbf), so that the TCP emulated hosts can
# run on this kernel, whose qdiscs (fq_codel built in, red, codel, pie) mark ECN where the host's kernel may
# have none (reports/tests/test_lossless_ecn_softroce.sh).
netns_modules=(llc stp bridge veth sch_tbf)
bed_subnet=10.78.0
# The bed's links carry jumbo frames: 4200 bytes is the least MTU at which RoCE runs at 4096 (an rxe frame
# needs 80 bytes more, iboe_get_mtu 96), as netcheck's lossless profile asks (link.min_mtu).
bed_mtu=4200
bed_cpus_default=2
max_hosts=16

die() { echo "guest.sh: $*" >&2; exit 2; }
unavailable() { echo "guest.sh: cannot boot a soft-RoCE guest: $*" >&2; exit 77; }

kernel_version() { ls "$cache/root/lib/modules" 2>/dev/null | sort -V | tail -1; }

prepare() {
  [[ -n $(kernel_version) && -e $cache/root/lib/modules/$(kernel_version)/modules.dep ]] && return 0
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
  [[ -n $pkg ]] || die "apt-cache knows no linux-image-amd64 (run apt-get update)"
  mkdir -p "$cache"
  (cd "$cache" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
  local deb
  deb=$(ls "$cache"/"$pkg"_*.deb 2>/dev/null | head -1)
  [[ -n $deb ]] || die "apt-get download $pkg failed"
  rm -rf "$cache/root.new"
  dpkg-deb -x "$deb" "$cache/root.new"
  # Only the modules the guest loads are kept (the package has no modules.dep: depmod makes it).
  local ver
  ver=$(ls "$cache/root.new/lib/modules" | sort -V | tail -1)
  depmod -b "$cache/root.new" "$ver"
  rm -rf "$cache/root"
  mv "$cache/root.new" "$cache/root"
  rm -f "$deb"
  echo "guest.sh: kernel $ver in $cache/root"
}

check() {
  command -v qemu-system-x86_64 >/dev/null || unavailable "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
  [[ -x /bin/busybox ]] || unavailable "/bin/busybox is not installed (apt-get install busybox-static)"
  [[ -n $(kernel_version) ]] || unavailable "no guest kernel in $cache (run: $0 prepare)"
  [[ $(id -u) == 0 ]] || unavailable "sharing the host root into the guest needs root"
  command -v rdma >/dev/null || unavailable "the rdma tool (iproute2) is missing"
  [[ -e /etc/libibverbs.d/rxe.driver ]] || unavailable "the rxe provider is missing (apt-get install ibverbs-providers)"
}

# What a bed of several hosts needs besides: taps and a network namespace of its own.
check_bed() {
  check
  [[ -c /dev/net/tun ]] || unavailable "there is no /dev/net/tun for the bed's taps"
  local probe=softroce-check-$$
  ip netns add "$probe" 2>/dev/null || unavailable "this kernel refuses network namespaces (the bed's network is one)"
  ip netns delete "$probe"
}

# The initramfs: busybox, the modules (MODULE... in load order) and /init.
make_initramfs() {
  local dir=$1 out=$2 ver
  shift 2
  ver=$(kernel_version)
  mkdir -p "$dir"/{bin,dev,proc,sys,host,modules}
  cp /bin/busybox "$dir/bin/busybox"
  local i=0 m path
  for m in "$@"; do
    path=$(modprobe -d "$cache/root" -S "$ver" --show-depends "$m" | awk '/^insmod/ {p=$2} END {print p}')
    [[ -n $path ]] || die "module $m is not in $cache/root"
    cp "$path" "$dir/modules/$(printf %02d $i)-$m.ko"
    i=$((i + 1))
  done
  cat >"$dir/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in /modules/*.ko; do
  case $m in *dummy.ko) insmod $m numdummies=0 ;; *) insmod $m ;; esac || echo "softroce-guest: insmod $m failed"
done
# The host's root, read-only; loose caching lets binaries and libraries be mapped and executed.
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /host || { echo "softroce-guest: no host root"; poweroff -f; }
mount -t proc proc /host/proc; mount -t sysfs sys /host/sys; mount -t devtmpfs dev /host/dev
# The guest's /tmp is its own tmpfs, but what the host keeps in /tmp (a CI checkout, a build) stays
# visible at the same paths, read-only: each top-level entry is bound into the guest's /tmp.
mkdir -p /hosttmp && mount -o bind /host/tmp /hosttmp
mount -t tmpfs tmp /host/tmp; mount -t tmpfs run /host/run 2>/dev/null
for e in /hosttmp/* /hosttmp/.[!.]*; do
  n=${e#/hosttmp/}
  case $n in job|out|'*'|'.[!.]*') continue ;; esac
  if [ -d "$e" ]; then mkdir -p "/host/tmp/$n"; else touch "/host/tmp/$n"; fi
  mount -o bind "$e" "/host/tmp/$n" 2>/dev/null || echo "softroce-guest: cannot show the host's /tmp/$n"
done
mkdir -p /host/tmp/job /host/tmp/out /host/dev/pts /host/dev/shm
mount -t devpts pts /host/dev/pts; mount -t tmpfs shm /host/dev/shm
# rdma_cm keeps its per-device defaults (RoCE mode, ToS) in configfs, where netcheck reads them.
mount -t configfs configfs /host/sys/kernel/config || echo "softroce-guest: cannot mount configfs"
mount -t 9p -o trans=virtio,version=9p2000.L,ro job /host/tmp/job
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none out /host/tmp/out
chroot /host /bin/sh -c '
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
  ip link set lo up
  if [ -e /tmp/job/net ]; then
    # A bed host: its eth0, shaped, and rxe0 on it; a host that cannot come up does not run SCRIPT.
    bash /tmp/job/net >/tmp/out/net.log 2>&1 || { cat /tmp/out/net.log; echo "softroce-guest: cannot bring up the host link"; exit 1; }
    . /tmp/job/env
  else
    ip link add dummy0 type dummy && ip addr add 10.0.0.1/24 dev dummy0 && ip link set dummy0 up &&
      rdma link add rxe0 type rxe netdev dummy0 || echo "softroce-guest: cannot bring up rxe0"
  fi
  cd /tmp/out
  set -- $(cat /tmp/job/args)
  sh /tmp/job/script "$@" > /tmp/out/script.log 2>&1
  echo $? > /tmp/out/.exit_code
'
sync
echo "softroce-guest: done"
poweroff -f
INIT
  chmod +x "$dir/init"
  (cd "$dir" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) >"$out"
}

# guest_argv JOBDIR OUTDIR INITRD CPUS: qemu's arguments for one guest (sets the array qemu_argv).
guest_argv() {
  local ver
  ver=$(kernel_version)
  # no_timer_check: on a loaded host the boot's IO-APIC timer check can miss TCG's slow ticks and panic
  # ("IO-APIC + timer doesn't work!": 2 of 4 bed guests at load average 14).
  qemu_argv=(-machine q35 -accel tcg,thread=multi -cpu max -smp "$4" -m "$mem"
    -kernel "$cache/root/boot/vmlinuz-$ver" -initrd "$3"
    -append "console=ttyS0 quiet panic=-1 clocksource=tsc tsc=reliable no_timer_check"
    -nographic -no-reboot -nodefaults -serial "file:$2/console.log"
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot
    -fsdev local,id=job,path="$1",security_model=none,readonly=on
    -device virtio-9p-pci,fsdev=job,mount_tag=job
    -fsdev local,id=out,path="$2",security_model=none
    -device virtio-9p-pci,fsdev=out,mount_tag=out)
}

# job_folder DIR SCRIPT ARGS...: what a guest reads from its job share.
job_folder() {
  local dir=$1 script=$2
  shift 2
  mkdir -p "$dir"
  cp "$script" "$dir/script"
  printf '%s\n' "$*" >"$dir/args"
}

run() {
  local hosts=0 rate=1gbit specs=() spec
  declare -A rate_of=() loss_of=()
  while [[ $# -gt 0 && $1 == --?* ]]; do
    [[ $# -ge 2 ]] || die "$1 needs a value"
    case $1 in
      --hosts) [[ $2 =~ ^[0-9]+$ ]] && (($2 >= 1 && $2 <= max_hosts)) || die "--hosts '$2' is not a number of hosts from 1 to $max_hosts"
               hosts=$2 ;;
      --rate|--rate-of|--loss-of) specs+=("$1" "$2") ;;
      *) die "unknown option $1" ;;
    esac
    shift 2
  done
  local i
  for ((i = 0; i < ${#specs[@]}; i += 2)); do
    spec=${specs[i + 1]}
    ((hosts > 0)) || die "${specs[i]} needs --hosts"
    if [[ ${specs[i]} == --rate ]]; then link_check_rate --rate "$spec"; rate=$spec; continue; fi
    [[ $spec == *=* ]] || die "${specs[i]} '$spec' is not K=VALUE"
    link_check_host "${specs[i]}" "${spec%%=*}" "$hosts"
    local host=$((10#${spec%%=*}))
    if [[ ${specs[i]} == --rate-of ]]; then
      link_check_rate "--rate-of $host" "${spec#*=}"; rate_of[$host]=${spec#*=}
    else
      link_check_loss "--loss-of $host" "${spec#*=}"; loss_of[$host]=${spec#*=}
    fi
  done
  [[ $# -ge 1 ]] || die "usage: guest.sh run [--hosts N [--rate R] [--rate-of K=R]... [--loss-of K=P]...] SCRIPT [OUTDIR] [-- ARGS...]"
  local script=$1 outdir="" args=()
  shift
  if [[ $# -gt 0 && $1 != -- ]]; then outdir=$1; shift; fi
  if [[ $# -gt 0 && $1 == -- ]]; then shift; args=("$@"); fi
  [[ -r $script ]] || die "cannot read SCRIPT '$script'"
  local arg
  for arg in "${args[@]}"; do [[ $arg =~ ^[A-Za-z0-9_./:=,+-]*$ ]] || die "argument '$arg' has characters the guest would split"; done
  if ((hosts > 0)); then check_bed; else check; fi
  work=$(mktemp -d /tmp/softroce.XXXXXX)
  trap "rm -rf '$work'" EXIT
  if [[ -z $outdir ]]; then outdir=$work/out; fi
  mkdir -p "$outdir"
  outdir=$(cd "$outdir" && pwd)
  if ((hosts > 0)); then
    run_bed "$hosts" "$rate" "$script" "$outdir" "${args[@]}"
  fi
  rm -f "$outdir/.exit_code" "$outdir/script.log"
  job_folder "$work/job" "$script" "${args[@]}"
  make_initramfs "$work/initramfs" "$work/initrd.cpio" "${modules[@]}" "${netns_modules[@]}"
  local rc=0
  guest_argv "$work/job" "$outdir" "$work/initrd.cpio" "${cpus:-4}"
  timeout --kill-after=10 "$deadline_s" qemu-system-x86_64 "${qemu_argv[@]}" </dev/null &
  local qemu=$!
  # SCRIPT's output as it comes (the out share is uncached, so its writes land here at once).
  tail -n +1 -F --pid="$qemu" "$outdir/script.log" 2>/dev/null &
  wait "$qemu" || rc=$?
  wait
  if [[ $rc == 124 || $rc == 137 ]]; then
    echo "guest.sh: the guest did not finish within ${deadline_s} s and was killed (console: $outdir/console.log)" >&2
    exit 124
  fi
  if [[ ! -e $outdir/.exit_code ]]; then
    echo "guest.sh: the guest ended without running SCRIPT (qemu exit $rc); console:" >&2
    tail -30 "$outdir/console.log" >&2 || true
    exit 3
  fi
  local code
  code=$(cat "$outdir/.exit_code")
  rm -f "$outdir/.exit_code"
  exit "$code"
}

# Kills every process in the bed's namespace (its qemus and their timeouts) and deletes the namespace
# with its bridge and taps; the work folder goes too.
bed_teardown() {
  local pids i
  pids=$(ip netns pids "$bed" 2>/dev/null || true)
  if [[ -n $pids ]]; then
    kill -9 $pids 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      [[ -z $(ip netns pids "$bed" 2>/dev/null) ]] && break
      sleep 0.1
    done
  fi
  ip netns delete "$bed" 2>/dev/null || true
  rm -rf "$work"
}

# run_bed N RATE SCRIPT OUTDIR ARGS...: see the header (rate_of and loss_of are run's).
run_bed() {
  local n=$1 rate=$2 script=$3 outdir=$4 k
  shift 4
  bed=softroce-$$
  trap bed_teardown EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  ip netns add "$bed"
  ip -n "$bed" link set lo up
  ip -n "$bed" link add br0 type bridge
  ip -n "$bed" link set br0 up
  : >"$work/hosts"
  for ((k = 0; k < n; k++)); do echo "host$k $bed_subnet.$((k + 1))" >>"$work/hosts"; done
  make_initramfs "$work/initramfs" "$work/initrd.cpio" "${modules[@]}" "${bed_modules[@]}"
  local qemus=() host_rate loss
  for ((k = 0; k < n; k++)); do
    host_rate=${rate_of[$k]:-$rate} loss=${loss_of[$k]:-0}
    ip -n "$bed" tuntap add dev "tap$k" mode tap
    ip -n "$bed" link set "tap$k" mtu "$bed_mtu"
    ip -n "$bed" link set "tap$k" master br0
    ip -n "$bed" link set "tap$k" up
    link_shape "tap$k" "$host_rate" "$bed"
    local job=$work/job$k out=$outdir/host$k
    job_folder "$job" "$script" "$@"
    cp "$here/../link.sh" "$work/hosts" "$job/"
    printf 'export SOFTROCE_HOST=%d SOFTROCE_HOSTS=/tmp/job/hosts\n' "$k" >"$job/env"
    cat >"$job/net" <<NET
set -e
. /tmp/job/link.sh
echo host$k >/proc/sys/kernel/hostname
ip link set eth0 mtu $bed_mtu up
ip addr add $bed_subnet.$((k + 1))/24 dev eth0
link_shape eth0 $host_rate "" $loss
link_ingress_loss eth0 $loss
rdma link add rxe0 type rxe netdev eth0
NET
    rm -rf "$out" && mkdir -p "$out"
    guest_argv "$job" "$out" "$work/initrd.cpio" "${cpus:-$bed_cpus_default}"
    ip netns exec "$bed" timeout --kill-after=10 "$deadline_s" qemu-system-x86_64 "${qemu_argv[@]}" \
      -name "softroce-$$-host$k" -netdev "tap,id=net0,ifname=tap$k,script=no,downscript=no" \
      -device "virtio-net-pci,netdev=net0,mac=52:54:00:78:00:$(printf %02x "$k")" </dev/null &
    qemus+=($!)
    tail -n +1 -F --pid="$!" "$out/script.log" 2>/dev/null | sed -u "s/^/host$k: /" &
  done
  local rcs=() rc late=() lost=()
  for ((k = 0; k < n; k++)); do
    rc=0
    wait "${qemus[k]}" || rc=$?
    rcs+=("$rc")
  done
  wait
  for ((k = 0; k < n; k++)); do
    local out=$outdir/host$k
    if [[ ${rcs[k]} == 124 || ${rcs[k]} == 137 ]]; then
      echo "guest.sh: host $k did not finish within ${deadline_s} s and was killed (console: $out/console.log)" >&2
      late+=("$k")
    elif [[ ! -e $out/.exit_code ]]; then
      echo "guest.sh: host $k ended without finishing SCRIPT (qemu exit ${rcs[k]}); its console:" >&2
      tail -30 "$out/console.log" >&2 || true
      lost+=("$k")
    else
      mv "$out/.exit_code" "$out/exit_code"
      echo "guest.sh: host $k: SCRIPT exited $(cat "$out/exit_code")" >&2
    fi
  done
  ((${#late[@]} == 0)) || exit 124
  ((${#lost[@]} == 0)) || exit 3
  exit "$(cat "$outdir/host0/exit_code")"
}

case ${1:-} in
  prepare) prepare ;;
  check)
    case ${2:-} in
      "") check ;;
      --hosts) check_bed ;;
      *) die "usage: guest.sh check [--hosts]" ;;
    esac
    echo "guest.sh: ready${2:+ for --hosts} (kernel $(kernel_version), $(qemu-system-x86_64 --version | head -1))" ;;
  run) shift; run "$@" ;;
  *) die "usage: guest.sh prepare | check [--hosts] | run [--hosts N [--rate R] [--rate-of K=R]... [--loss-of K=P]...] SCRIPT [OUTDIR] [-- ARGS...]" ;;
esac
