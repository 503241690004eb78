// GPU probe buffers in a build without CUDA: the verbs probes record skip with this reason.
#include "gpu_buffer.hpp"

#include "rocebench/common/errors.hpp"

namespace rocebench::microbench {

std::optional<std::string> gpu_buffer_unavailable(int) {
  return std::string("--gpu: this rocebench was built without CUDA (no toolkit found at configure time)");
}

GpuBuffer::GpuBuffer(int, ibv_pd*, std::size_t, int) { throw InfraError(*gpu_buffer_unavailable(0)); }
GpuBuffer::~GpuBuffer() = default;
void GpuBuffer::release() {}
void GpuBuffer::write(std::size_t, const void*, std::size_t) {}
void GpuBuffer::read(std::size_t, void*, std::size_t) const {}

}  // namespace rocebench::microbench
