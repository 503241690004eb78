#pragma once
// The verbs transport's protocol with one peer, free of any device so it is tested on any host.
//
// Eager copy through registered rings: each direction has `slots` slots of `slot_bytes` on both
// ends (the sender's staging ring, the receiver's ring). A message goes out as fragments of at most
// one slot; fragment k is copied into staging slot k % slots and RDMA-written with immediate (its
// length) into the receiver's slot k % slots. RC delivers writes in order, so the receiver knows
// the slot from the arrival count. The sender holds one credit per free remote slot; the receiver
// hands credits back once it has copied fragments out into the posted receives.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/transport/transport.hpp"

namespace rocebench::verbs {

struct Fragment {
  std::uint32_t slot;   // the same index in the sender's staging ring and the receiver's ring
  std::uint32_t bytes;  // may be 0: a 0-byte message still takes a slot, so it keeps its place
};

class RingFlow {
 public:
  // `staging` and `ring` each hold slots * slot_bytes bytes (the registered memory of one peer).
  RingFlow(std::uint32_t slots, std::size_t slot_bytes, char* staging, const char* ring);

  // Sending side. The message is copied out before its request completes, so the caller's buffer
  // is free as soon as the request is done.
  void post_send(transport::Request id, const char* data, std::size_t bytes);
  // Copies the next fragment into staging and spends a credit; nothing when no credit or no data.
  // A send whose last fragment was copied is appended to `done`.
  std::optional<Fragment> next_fragment(std::vector<transport::Request>& done);
  void credits_returned(std::uint32_t n);

  // Receiving side, in posting order.
  void post_recv(transport::Request id, char* data, std::size_t bytes);
  // The next ring slot now holds `bytes` bytes (called in arrival order).
  void fragment_arrived(std::uint32_t bytes);
  // Copies arrived fragments into posted receives; finished receives are appended to `done`.
  // Throws std::logic_error when a fragment does not fit the receive it lands in (sizes disagree).
  void deliver(std::vector<transport::Request>& done);
  // Credits to hand back now, 0 for "not yet": they go back in batches of a quarter ring, and all
  // at once whenever nothing is left waiting in the ring, so none is withheld while the sender waits.
  std::uint32_t take_credits();

  bool sending() const { return !sends_.empty(); }
  bool receiving() const { return !recvs_.empty(); }
  std::uint32_t credits() const { return credits_; }
  std::size_t slot_bytes() const { return slot_bytes_; }

 private:
  struct Pending {
    transport::Request id;
    char* data;
    std::size_t left;
  };

  std::uint32_t slots_;
  std::size_t slot_bytes_;
  char* staging_;
  const char* ring_;
  std::uint32_t credits_;
  std::uint64_t fragments_sent_ = 0;
  std::deque<Pending> sends_, recvs_;
  std::deque<std::uint32_t> arrived_;  // lengths of the fragments in the ring, not yet copied out
  std::uint64_t fragments_copied_ = 0;
  std::uint32_t credits_owed_ = 0;
};

}  // namespace rocebench::verbs
