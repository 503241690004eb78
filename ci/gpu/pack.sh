#!/bin/bash
# Packs a CUDA build of rocebench for a GPU machine that lacks this project's Debian packages (a
# bare image with only the CUDA stack): the stripped binaries, laid out as in the build tree, plus
# the shared libraries they load from the system (oneDNN, fmt, rdma-core, ...). CUDA, cuBLAS, cuDNN
# and NCCL are not packed; ci/gpu/check.sh finds the target machine's own.
# Usage: ci/gpu/pack.sh BUILD_DIR DEST_DIR   (DEST_DIR/rocebench-gpu.tar.xz)
set -euo pipefail
build=${1:?usage: ci/gpu/pack.sh BUILD_DIR DEST_DIR} dest=${2:?usage: ci/gpu/pack.sh BUILD_DIR DEST_DIR}
binaries=(harness/rocebench models/models_gpu_tests)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bundle/lib"
for b in "${binaries[@]}"; do
  [[ -x $build/$b ]] || { echo "pack.sh: $build/$b is missing: build it with CUDA first" >&2; exit 2; }
  mkdir -p "$stage/bundle/$(dirname "$b")"
  strip -o "$stage/bundle/$b" "$build/$b"
done
# Everything ldd resolves outside the CUDA toolkit, except glibc's and GCC's runtime libraries
# (the target's own are at least as new, and glibc's must match its loader).
ldd "${binaries[@]/#/$build/}" | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/usr/local/cuda|/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/bundle/lib/"; done
mkdir -p "$dest"
tar -cJf "$dest/rocebench-gpu.tar.xz" -C "$stage" bundle
ls -l "$dest/rocebench-gpu.tar.xz"
