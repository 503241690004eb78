#!/usr/bin/env bash
# CTest: `cpack -G DEB` builds a package with the binary, the plans, the netcheck profiles and the plot
# script, depending on the Debian libraries the binary links; the binary unpacked from it runs, and
# so does the one `apt-get install ./rocebench_*.deb` puts into a clean Debian 12 root (as root, with
# mmdebstrap; under CI=true their absence fails).
#   test_deb.sh CPACK BUILD_DIR
# Exit 77 (skipped, the reason on the last line) where Debian's packaging tools are missing.
set -uo pipefail
cpack=$1
build=$2
for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool is missing (dpkg-dev; ci/setup.sh installs it)"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; failures=$((failures + 1)); fi
}

start=$SECONDS
if ! "$cpack" -G DEB -B "$work" --config "$build/CPackConfig.cmake" >"$work/cpack.log" 2>&1; then
  echo "FAIL: cpack -G DEB"; tail -n 20 "$work/cpack.log"; exit 1
fi
deb=$(ls "$work"/rocebench_*.deb 2>/dev/null | head -n 1)
check "cpack wrote a .deb in $((SECONDS - start)) s: $(basename "${deb:-none}")" test -n "$deb"
[ -n "$deb" ] || exit 1
echo "$(du -h "$deb" | cut -f1) $(basename "$deb")"

dpkg-deb -c "$deb" | awk '{print $NF}' >"$work/contents"
for file in ./usr/bin/rocebench ./usr/share/rocebench/plans/local.json ./usr/share/rocebench/plans/plan.schema.json \
  ./usr/share/rocebench/profiles/lossless-roce.json ./usr/share/rocebench/plot.py ./usr/share/doc/rocebench/README.md; do
  check "the package holds $file" grep -qxF "$file" "$work/contents"
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
for lib in libc6 libfmt9 libibverbs1 librdmacm1; do
  check "it depends on $lib" grep -qE "(^|, )$lib( |,|$)" <<<"$depends"
done
check "it depends on no package of the CUDA toolkit (not in Debian)" test -z "$(grep -io cuda <<<"$depends")"
check "it recommends python3-matplotlib (plots)" grep -q python3-matplotlib <<<"$(dpkg-deb -f "$deb" Recommends)"

# The unpacked binary runs, with nothing of the source tree: --help, and a dry run of a packaged plan.
dpkg-deb -x "$deb" "$work/root"
bin=$work/root/usr/bin/rocebench
cuda_libs=$(objdump -p "$bin" 2>/dev/null | awk '/NEEDED/ && /cuda|cudnn|nccl|cublas/ {print $2}' | tr '\n' ' ')
[ -z "$cuda_libs" ] || echo "note: built with the CUDA toolkit; nodes need it under /usr/local/cuda: $cuda_libs"
check "the packaged binary is stripped" test "$(stat -c %s "$bin")" -lt 60000000
(cd / && "$bin" --help) >"$work/help.out" 2>&1
check "rocebench --help runs" grep -q "run" "$work/help.out"
(cd "$work" && "$bin" run "$work/root/usr/share/rocebench/plans/local.json" --dry-run) >"$work/dry.out" 2>&1
check "rocebench run PLAN --dry-run runs the packaged plan" grep -q "^local: 4 ranks" "$work/dry.out" || cat "$work/dry.out"

# Installed as the README tells operators: `apt-get install ./rocebench_*.deb` into a clean Debian 12
# root made from Debian's packages (mmdebstrap, cached), then run there: a library the package
# forgot to depend on fails here. The CUDA toolkit is not a Debian package: like a GPU node, the
# root gets it under /usr/local/cuda (bound read-only) when the binary links it.
install_in_clean_root() {
  local cache=${ROCEBENCH_DEBROOT_CACHE:-/var/cache/rocebench-debroot} base root
  base=$cache/bookworm-apt.tar
  if [ ! -s "$base" ] || [ -n "$(find "$base" -mtime +30)" ]; then
    mkdir -p "$cache"
    start=$SECONDS
    mmdebstrap --quiet --variant=apt --format=tar --skip=cleanup/apt/lists bookworm "$base.new" >"$work/mmdebstrap.log" 2>&1 &&
      mv "$base.new" "$base" || { echo "FAIL: mmdebstrap bookworm"; tail -n 20 "$work/mmdebstrap.log"; return 1; }
    echo "made a clean Debian 12 root in $((SECONDS - start)) s: $base"
  fi
  root=$work/clean-root
  mkdir -p "$root"
  tar -xf "$base" -C "$root"
  cp "$deb" "$root/tmp/"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  # Downloaded packages are kept between runs (the root itself is new each time).
  mkdir -p "$cache/archives/partial"
  mount --bind "$cache/archives" "$root/var/cache/apt/archives"
  if [ -n "$cuda_libs" ] && [ -d /usr/local/cuda ]; then
    mkdir -p "$root/usr/local/cuda"
    mount --rbind -o ro /usr/local/cuda "$root/usr/local/cuda"
  fi
  start=$SECONDS
  in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
  # Recommends (matplotlib for plots) left out: the test is whether the Depends suffice.
  if in_root apt-get install -y -qq --no-install-recommends "/tmp/$(basename "$deb")" >"$work/install.log" 2>&1; then
    echo "ok: apt-get install ./$(basename "$deb") in a clean Debian 12 root, $((SECONDS - start)) s"
  else
    echo "FAIL: apt-get install ./$(basename "$deb") in a clean Debian 12 root"; tail -n 20 "$work/install.log"; failures=$((failures + 1))
  fi
  in_root rocebench --help >"$work/root-help.out" 2>&1
  check "installed, rocebench --help runs (every library it links is installed)" grep -q "run" "$work/root-help.out" ||
    head -n 5 "$work/root-help.out"
  in_root sh -c 'cd /tmp && rocebench run /usr/share/rocebench/plans/local.json --dry-run' >"$work/root-dry.out" 2>&1
  check "installed, rocebench run --dry-run runs the packaged plan" grep -q "^local: 4 ranks" "$work/root-dry.out" ||
    head -n 5 "$work/root-dry.out"
  in_root rocebench accept --help >"$work/root-accept.out" 2>&1
  check "installed, rocebench accept --help runs" grep -q "Cluster acceptance" "$work/root-accept.out"
  # The check can fail: without one library the package depends on, the binary does not start.
  in_root dpkg --purge --force-depends libfmt9 >/dev/null 2>&1
  check "with libfmt9 removed, rocebench --help fails (a forgotten dependency would be caught)" \
    sh -c '! chroot "$1" rocebench --help >/dev/null 2>&1' _ "$root"
}
unmount_clean_root() {
  local root=$work/clean-root
  [ -d "$root" ] || return 0
  for m in usr/local/cuda var/cache/apt/archives dev proc; do mountpoint -q "$root/$m" && umount -R "$root/$m"; done
  return 0
}
trap 'unmount_clean_root; rm -rf "$work"' EXIT
if [ "$(id -u)" != 0 ] || ! command -v mmdebstrap >/dev/null; then
  why="installing into a clean root needs root and mmdebstrap (ci/setup.sh installs it)"
  if [ "${CI:-}" = true ]; then echo "FAIL: CI=true, yet $why"; failures=$((failures + 1)); else skipped=$why; fi
else
  install_in_clean_root || failures=$((failures + 1))
fi

echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
((failures > 0)) && exit 1
# The install could not be tried: the test did not pass, it was skipped (ci/skip_reasons.sh lists it).
[ -n "${skipped:-}" ] && { echo "SKIP: $skipped"; exit 77; }
exit 0
