#pragma once
// Large host buffers on transparent huge pages where the kernel allows them (madvise mode), so that
// first touching 64 MiB takes 32 page faults instead of 16384. On these VMs a fault costs
// microseconds (perf: a 64 MiB sweep's set-up was mostly faulting in fresh vectors).
#include <cstddef>

namespace rocebench {

class HostBuffer {
 public:
  HostBuffer() = default;
  explicit HostBuffer(std::size_t bytes);  // zero-filled, as fresh anonymous memory is
  ~HostBuffer();
  HostBuffer(HostBuffer&& other) noexcept;
  HostBuffer& operator=(HostBuffer&& other) noexcept;
  HostBuffer(const HostBuffer&) = delete;
  HostBuffer& operator=(const HostBuffer&) = delete;

  char* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace rocebench
