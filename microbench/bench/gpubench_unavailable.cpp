// Built without CUDA: the GPU benchmarks record skip with this reason.
#include "gpubench.hpp"

namespace rocebench::microbench {

std::optional<std::string> gpu_unavailable() { return std::string("no GPU support in this build (built without CUDA)"); }

void register_gpu_benchmarks(const HostBenchOptions&) {}

}  // namespace rocebench::microbench
