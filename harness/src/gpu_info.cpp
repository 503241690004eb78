// GPU inventory: real queries when built with CUDA, an honest reason when not.
#include "metadata.hpp"

#include <fmt/format.h>

#ifdef ROCEBENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif
#ifdef ROCEBENCH_HAVE_NCCL
#include <nccl.h>
#endif
#ifdef ROCEBENCH_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace rocebench {

json collect_gpu_info() {
  json out{{"devices", json::array()}};
#ifdef ROCEBENCH_HAVE_CUDA
  int runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  out["cuda_runtime"] = fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10);
#ifdef ROCEBENCH_HAVE_NCCL
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    out["nccl"] = fmt::format("{}.{}.{}", nccl / 10000, (nccl % 10000) / 100, nccl % 100);
  }
#endif
#ifdef ROCEBENCH_HAVE_CUDNN
  const std::size_t cudnn = cudnnGetVersion();
  out["cudnn"] = fmt::format("{}.{}.{}", cudnn / 10000, (cudnn % 10000) / 100, cudnn % 100);
#endif
  int driver = 0;
  if (cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0) {
    out["driver"] = fmt::format("CUDA {}.{}", driver / 1000, (driver % 1000) / 10);
  }
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    out["reason"] = fmt::format("no GPU: cudaGetDeviceCount: {}", cudaGetErrorString(rc));
    return out;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    char bus[32] = {};
    cudaDeviceGetPCIBusId(bus, sizeof bus, i);
    out["devices"].push_back({{"index", i},
                              {"name", prop.name},
                              {"memory_bytes", prop.totalGlobalMem},
                              {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
                              {"pci_bus_id", bus}});
  }
  if (count == 0) out["reason"] = "no GPU: cudaGetDeviceCount found none";
#else
  out["reason"] = "no GPU support in this build (built without CUDA)";
#endif
  return out;
}

}  // namespace rocebench
