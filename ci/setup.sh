#!/usr/bin/env bash
# Installs every Debian package rocebench builds, tests and runs with. Idempotent; Debian 12, as root.
set -euo pipefail

packages=(
  # toolchain; clang and libFuzzer for ci/fuzz.sh
  build-essential g++ cmake ninja-build pkg-config git ca-certificates clang libclang-rt-14-dev
  # RDMA: verbs and rdma_cm libraries, providers, tools, and the perftest peers
  rdma-core libibverbs-dev librdmacm-dev ibverbs-utils ibverbs-providers rdmacm-utils perftest
  # libraries
  nlohmann-json3-dev libfmt-dev libbenchmark-dev libgtest-dev libgmock-dev libsqlite3-dev sqlite3
  openmpi-bin libopenmpi-dev libdnnl-dev
  # a real Slurm cluster on the emulated hosts (ci/testbeds/slurm)
  slurm-wlm munge
  # models: the data loader's image decoders (JPEG through TurboJPEG, PNG)
  libturbojpeg0-dev libpng-dev
  # Debian's dnnl CMake config needs the OpenCL headers and loader to configure
  ocl-icd-opencl-dev opencl-headers
  # reports: plots and the reference JSON Schema validator used by tests
  python3 python3-matplotlib python3-jsonschema
  # the Kubernetes manifest checked as YAML, the Prometheus textfile by promtool (accept --k8s, --metrics)
  python3-yaml prometheus
  # emulated hosts and host inspection
  iproute2 ethtool iperf3 procps pciutils kmod util-linux
  # peers the probes are compared with (ci/bench)
  sockperf
  # soft-RoCE test bed (ci/testbeds/softroce): a TCG guest with rdma_rxe
  qemu-system-x86 busybox-static
  # the Gloo ring allreduce peer of ci/bench/allreduce_vs_peers.sh
  libgloo-dev
  # the package installed as operators install it, into a clean Debian root (ci/package/test_deb.sh)
  mmdebstrap
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "ci/setup.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "ci/setup.sh: all ${#packages[@]} packages present"
fi

# The soft-RoCE guest's kernel (Debian's linux-image, unpacked into a cache; skipped when present).
bash "$(dirname "$0")/testbeds/softroce/guest.sh" prepare
