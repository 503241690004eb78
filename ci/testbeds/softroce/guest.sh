#!/usr/bin/env bash
# Soft-RoCE test bed: a qemu guest (TCG, no KVM needed) running Debian's 6.1 kernel with rdma_rxe.
#
#   guest.sh prepare                      fetch and unpack the guest kernel (needs apt; ci/setup.sh runs it)
#   guest.sh check                        exit 0 when a guest can boot here, else print why and exit 77
#   guest.sh run SCRIPT [OUTDIR] [-- ARGS...]
#       boots a guest whose root is this host's root filesystem (read-only over virtio-9p), brings up
#       rxe0 on dummy0 (10.0.0.1/24; its RoCE v2 GID is index 1), runs `sh SCRIPT ARGS...` in it with
#       the working directory OUTDIR (writable, shared back), and exits with SCRIPT's exit code.
#       SCRIPT's output goes to stdout and OUTDIR/script.log, the guest console to OUTDIR/console.log.
#       Everything is bounded by $SOFTROCE_DEADLINE_S (default 600 s): a hung guest is killed (exit 124).
#
# Environment: SOFTROCE_CACHE (default /var/cache/rocebench-softroce), SOFTROCE_CPUS (4: with 2, busy-
# polling peers starve rxe's kernel work), SOFTROCE_MEM (2048 MiB), SOFTROCE_DEADLINE_S.
set -euo pipefail

cache=${SOFTROCE_CACHE:-/var/cache/rocebench-softroce}
cpus=${SOFTROCE_CPUS:-4}
mem=${SOFTROCE_MEM:-2048}
deadline_s=${SOFTROCE_DEADLINE_S:-600}

# In this order (what `modprobe --show-depends` gives, crc32_generic being rdma_rxe's soft dependency).
modules=(crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe configfs ib_cm iw_cm rdma_cm rdma_ucm
  virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci 9pnet 9pnet_virtio netfs fscache 9p dummy)

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

# The initramfs: busybox, the modules in load order and /init.
make_initramfs() {
  local dir=$1 out=$2 ver
  ver=$(kernel_version)
  mkdir -p "$dir"/{bin,dev,proc,sys,host,modules}
  cp /bin/busybox "$dir/bin/busybox"
  local i=0 m path
  for m in "${modules[@]}"; do
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
mount -t 9p -o trans=virtio,version=9p2000.L,ro job /host/tmp/job
mount -t 9p -o trans=virtio,version=9p2000.L,cache=none out /host/tmp/out
chroot /host /bin/sh -c '
  export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp
  ip link set lo up
  ip link add dummy0 type dummy && ip addr add 10.0.0.1/24 dev dummy0 && ip link set dummy0 up &&
    rdma link add rxe0 type rxe netdev dummy0 || echo "softroce-guest: cannot bring up rxe0"
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

run() {
  [[ $# -ge 1 ]] || die "usage: guest.sh run SCRIPT [OUTDIR] [-- ARGS...]"
  local script=$1 outdir="" args=()
  shift
  if [[ $# -gt 0 && $1 != -- ]]; then outdir=$1; shift; fi
  if [[ $# -gt 0 && $1 == -- ]]; then shift; args=("$@"); fi
  [[ -r $script ]] || die "cannot read SCRIPT '$script'"
  local arg
  for arg in "${args[@]}"; do [[ $arg =~ ^[A-Za-z0-9_./:=,+-]*$ ]] || die "argument '$arg' has characters the guest would split"; done
  check
  local work
  work=$(mktemp -d /tmp/softroce.XXXXXX)
  trap "rm -rf '$work'" EXIT
  if [[ -z $outdir ]]; then outdir=$work/out; fi
  mkdir -p "$outdir" "$work/job"
  outdir=$(cd "$outdir" && pwd)
  rm -f "$outdir/.exit_code" "$outdir/script.log"
  cp "$script" "$work/job/script"
  printf '%s\n' "${args[*]}" >"$work/job/args"
  make_initramfs "$work/initramfs" "$work/initrd.cpio"
  local ver rc=0
  ver=$(kernel_version)
  timeout --kill-after=10 "$deadline_s" qemu-system-x86_64 \
    -machine q35 -accel tcg,thread=multi -cpu max -smp "$cpus" -m "$mem" \
    -kernel "$cache/root/boot/vmlinuz-$ver" -initrd "$work/initrd.cpio" \
    -append "console=ttyS0 quiet panic=-1 clocksource=tsc tsc=reliable" \
    -nographic -no-reboot -nodefaults -serial "file:$outdir/console.log" \
    -fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
    -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
    -fsdev local,id=job,path="$work/job",security_model=none,readonly=on \
    -device virtio-9p-pci,fsdev=job,mount_tag=job \
    -fsdev local,id=out,path="$outdir",security_model=none \
    -device virtio-9p-pci,fsdev=out,mount_tag=out </dev/null &
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

case ${1:-} in
  prepare) prepare ;;
  check) check && echo "guest.sh: ready (kernel $(kernel_version), $(qemu-system-x86_64 --version | head -1))" ;;
  run) shift; run "$@" ;;
  *) die "usage: guest.sh prepare | check | run SCRIPT [OUTDIR] [-- ARGS...]" ;;
esac
