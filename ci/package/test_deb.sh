#!/usr/bin/env bash
# CTest: `cpack -G DEB` builds a package with the binary, the plans, the netcheck profiles and the plot
# script, depending on the Debian libraries the binary links; the binary unpacked from it runs.
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
echo "$((failures == 0 ? 1 : 0)) passed, $failures failed"
exit $((failures > 0))
