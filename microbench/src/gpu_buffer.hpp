#pragma once
// GPU memory for the verbs probes (--gpu N), registered with the RDMA device: through a dma-buf the
// CUDA driver exports (ibv_reg_dmabuf_mr) where it can, else ibv_reg_mr on the device pointer, which
// works where nvidia-peermem is loaded. gpu_buffer.cpp is built against CUDA when it is found,
// gpu_buffer_unavailable.cpp otherwise.
#include <cstddef>
#include <optional>
#include <string>

struct ibv_pd;
struct ibv_mr;

namespace rocebench::microbench {

// Why GPU `index` cannot hold probe buffers here (no CUDA build, no GPU, no such GPU), or nothing.
std::optional<std::string> gpu_buffer_unavailable(int index);

class GpuBuffer {
 public:
  // `bytes` of device memory on GPU `index`, registered on `pd` with `access`; InfraError naming
  // what each registration answered when neither works.
  GpuBuffer(int index, ibv_pd* pd, std::size_t bytes, int access);
  ~GpuBuffer();
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  char* data() const { return data_; }  // a device address, page aligned
  ibv_mr* mr() const { return mr_; }
  const std::string& registration() const { return registration_; }  // "dmabuf" or "peermem"
  void write(std::size_t offset, const void* host, std::size_t n);
  void read(std::size_t offset, void* host, std::size_t n) const;

 private:
  void release();
  void* base_ = nullptr;
  char* data_ = nullptr;
  ibv_mr* mr_ = nullptr;
  int dmabuf_fd_ = -1;
  std::string registration_;
};

}  // namespace rocebench::microbench
