#include "rocebench/transport/verbs/flow.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace rocebench::verbs {

RingFlow::RingFlow(std::uint32_t slots, std::size_t slot_bytes, char* staging, const char* ring)
    : slots_(slots), slot_bytes_(slot_bytes), staging_(staging), ring_(ring), credits_(slots) {
  if (slots == 0 || slot_bytes == 0) throw std::invalid_argument("a ring needs at least one slot of at least one byte");
}

void RingFlow::post_send(transport::Request id, const char* data, std::size_t bytes) {
  sends_.push_back({id, const_cast<char*>(data), bytes});
}

std::optional<Fragment> RingFlow::next_fragment(std::vector<transport::Request>& done) {
  if (sends_.empty() || credits_ == 0) return std::nullopt;
  Pending& p = sends_.front();
  const Fragment f{static_cast<std::uint32_t>(fragments_sent_ % slots_),
                   static_cast<std::uint32_t>(std::min(p.left, slot_bytes_))};
  if (f.bytes) std::memcpy(staging_ + f.slot * slot_bytes_, p.data, f.bytes);
  p.data += f.bytes;
  p.left -= f.bytes;
  --credits_;
  ++fragments_sent_;
  if (p.left == 0) {
    done.push_back(p.id);
    sends_.pop_front();
  }
  return f;
}

void RingFlow::credits_returned(std::uint32_t n) {
  if (credits_ + n > slots_) throw std::logic_error(fmt::format("{} credits returned with {} of {} held", n, credits_, slots_));
  credits_ += n;
}

void RingFlow::post_recv(transport::Request id, char* data, std::size_t bytes) { recvs_.push_back({id, data, bytes}); }

void RingFlow::fragment_arrived(std::uint32_t bytes) {
  if (bytes > slot_bytes_ || arrived_.size() >= slots_) {
    throw std::logic_error(fmt::format("a {}-byte fragment arrived with {} of {} slots full", bytes, arrived_.size(), slots_));
  }
  arrived_.push_back(bytes);
}

void RingFlow::deliver(std::vector<transport::Request>& done) {
  while (!arrived_.empty() && !recvs_.empty()) {
    Pending& p = recvs_.front();
    const std::uint32_t bytes = arrived_.front();
    if (bytes > p.left || (bytes == 0 && p.left != 0)) {
      throw std::logic_error(fmt::format("a {}-byte fragment arrived for a receive expecting {} more bytes: "
                                         "the ranks disagree on a message size",
                                         bytes, p.left));
    }
    const std::size_t slot = fragments_copied_ % slots_;
    if (bytes) std::memcpy(p.data, ring_ + slot * slot_bytes_, bytes);
    p.data += bytes;
    p.left -= bytes;
    arrived_.pop_front();
    ++fragments_copied_;
    ++credits_owed_;
    if (p.left == 0) {
      done.push_back(p.id);
      recvs_.pop_front();
    }
  }
}

std::uint32_t RingFlow::take_credits() {
  if (credits_owed_ == 0 || (credits_owed_ < std::max<std::uint32_t>(1, slots_ / 4) && !arrived_.empty())) return 0;
  return std::exchange(credits_owed_, 0);
}

}  // namespace rocebench::verbs
