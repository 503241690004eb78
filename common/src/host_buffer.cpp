#include "rocebench/common/host_buffer.hpp"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace rocebench {

HostBuffer::HostBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  ::madvise(memory, bytes, MADV_HUGEPAGE);  // a hint: without THP the pages are simply small
  data_ = static_cast<char*>(memory);
}

HostBuffer::~HostBuffer() {
  if (data_) ::munmap(data_, size_);
}

HostBuffer::HostBuffer(HostBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HostBuffer& HostBuffer::operator=(HostBuffer&& other) noexcept {
  HostBuffer old(std::move(other));  // this buffer's pages go with `old`
  std::swap(data_, old.data_);
  std::swap(size_, old.size_);
  return *this;
}

}  // namespace rocebench
