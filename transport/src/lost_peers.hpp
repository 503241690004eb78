#pragma once
// A rank whose process died may leave its peers waiting in silence until their deadline: a queue pair
// to it hears nothing until its retries run out, and a rank further along a ring only sees the data
// stop. The rendezvous learns of the death at once (the rank's connection to rank 0 closed without a
// goodbye), so a wait that makes no progress asks it, at most once a second.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::transport {

class LostPeerWatch {
 public:
  static constexpr int kIntervalMs = 1000;

  LostPeerWatch(Rendezvous& rendezvous, int rank, std::string transport)
      : rendezvous_(&rendezvous), rank_(rank), transport_(std::move(transport)) {}

  // Call on a wait's idle turns. Throws InfraError naming whom the wait is owed data by (what
  // `owed()` says) and the lost ranks, once the run has lost one.
  template <class Owed>
  void check(Owed owed) {
    const auto now = Clock::now();
    if (now < next_) return;
    next_ = now + std::chrono::milliseconds(kIntervalMs);
    std::vector<std::string> lost;
    try {
      lost = rendezvous_->lost_ranks();
    } catch (const DeadlineExceeded&) {
      return;  // a slow answer is no news: the wait's own deadline still holds
    }
    if (lost.empty()) return;
    throw InfraError(fmt::format("rank {}: {} transport: transfers pending to/from {}, and the run lost a rank: {}", rank_,
                                 transport_, owed(), fmt::join(lost, "; ")));
  }

 private:
  using Clock = std::chrono::steady_clock;
  Rendezvous* rendezvous_;
  int rank_;
  std::string transport_;
  Clock::time_point next_ = Clock::now() + std::chrono::milliseconds(kIntervalMs);
};

}  // namespace rocebench::transport
