// GPU probe buffers on CUDA. The driver's dma-buf export is looked up through the runtime
// (cudaGetDriverEntryPointByVersion), so rocebench does not link libcuda and still starts on hosts
// without the NVIDIA driver.
#include "gpu_buffer.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::microbench {
namespace {

constexpr std::size_t kAlign = 64 * 1024;  // dma-buf export wants page-aligned ranges; keep a margin

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw InfraError(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}

using GetHandle = CUresult (*)(void*, CUdeviceptr, std::size_t, CUmemRangeHandleType, unsigned long long);

// The dma-buf file descriptor of [ptr, ptr + bytes), or -1 with why in `why`.
int export_dmabuf(void* ptr, std::size_t bytes, std::string& why) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion("cuMemGetHandleForAddressRange", &fn, 11070, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !fn) {
    why = "the driver has no cuMemGetHandleForAddressRange";
    return -1;
  }
  int fd = -1;
  const CUresult r = reinterpret_cast<GetHandle>(fn)(&fd, reinterpret_cast<CUdeviceptr>(ptr), bytes,
                                                     CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
  if (r != CUDA_SUCCESS) {
    why = fmt::format("cuMemGetHandleForAddressRange: CUresult {}", static_cast<int>(r));
    return -1;
  }
  return fd;
}

}  // namespace

std::optional<std::string> gpu_buffer_unavailable(int index) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return fmt::format("--gpu {}: no GPU ({})", index, cudaGetErrorString(e));
  if (index >= count) return fmt::format("--gpu {}: this host has {} GPU(s)", index, count);
  return std::nullopt;
}

GpuBuffer::GpuBuffer(int index, ibv_pd* pd, std::size_t bytes, int access) {
  cuda_ok(cudaSetDevice(index), "cudaSetDevice");
  const std::size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
  cuda_ok(cudaMalloc(&base_, size + kAlign), "cudaMalloc");
  const auto aligned = (reinterpret_cast<std::uintptr_t>(base_) + kAlign - 1) / kAlign * kAlign;
  data_ = reinterpret_cast<char*>(aligned);
  std::string dmabuf_why;
  dmabuf_fd_ = export_dmabuf(data_, size, dmabuf_why);
  if (dmabuf_fd_ >= 0) {
    mr_ = ::ibv_reg_dmabuf_mr(pd, 0, size, aligned, dmabuf_fd_, access);
    if (mr_) {
      registration_ = "dmabuf";
      return;
    }
    dmabuf_why = fmt::format("ibv_reg_dmabuf_mr: {}", std::strerror(errno));
  }
  mr_ = ::ibv_reg_mr(pd, data_, size, access);  // nvidia-peermem
  if (mr_) {
    registration_ = "peermem";
    return;
  }
  const std::string peermem_why = std::strerror(errno);
  release();
  throw InfraError(fmt::format("GPU {} memory cannot be registered with the RDMA device: dma-buf: {}; ibv_reg_mr: {} "
                               "(is nvidia-peermem loaded?)",
                               index, dmabuf_why, peermem_why));
}

GpuBuffer::~GpuBuffer() { release(); }

void GpuBuffer::release() {
  if (mr_) ::ibv_dereg_mr(mr_);
  mr_ = nullptr;
  if (dmabuf_fd_ >= 0) ::close(dmabuf_fd_);
  dmabuf_fd_ = -1;
  if (base_) cudaFree(base_);
  base_ = nullptr;
}

void GpuBuffer::write(std::size_t offset, const void* host, std::size_t n) {
  cuda_ok(cudaMemcpy(data_ + offset, host, n, cudaMemcpyHostToDevice), "cudaMemcpy to the GPU buffer");
}

void GpuBuffer::read(std::size_t offset, void* host, std::size_t n) const {
  cuda_ok(cudaMemcpy(host, data_ + offset, n, cudaMemcpyDeviceToHost), "cudaMemcpy from the GPU buffer");
}

}  // namespace rocebench::microbench
