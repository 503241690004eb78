// The gpu engine's entry point in a CUDA build. It finds out whether a GPU is here, so a step on a
// machine without one records `skip` with the reason. The cuDNN engine itself is not written yet:
// with a GPU present it says so instead of pretending.
#include <cuda_runtime_api.h>

#include <fmt/format.h>

#include "rocebench/models/engine.hpp"

namespace rocebench::models {

std::unique_ptr<Engine> make_gpu_engine(const Graph&, const EngineOptions&) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) throw EngineUnavailable(fmt::format("engine gpu: no GPU ({})", cudaGetErrorString(err)));
  if (devices == 0) throw EngineUnavailable("engine gpu: no GPU (CUDA sees no devices)");
  throw EngineUnavailable("engine gpu: the cuDNN training engine is not implemented yet (issue #7 follow-up)");
}

}  // namespace rocebench::models
