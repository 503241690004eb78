#pragma once
// The TCP twin of the lossless-under-load verdict (issue #41), from microbench.incast records alone, so
// a saved run re-judges the same. Per host: LOSSY (fail) when it is the host that explains the turns in
// which senders retransmitted (the all-pairs matrix's bad-host rule over the (receiver, sender) pairs of
// every turn), or every host of such a turn when no one host explains them; CONGESTED (warn) when, as
// the receiver, its 100 ms goodput p1 fell below a share of its p50 (goodput stalled); unverified when
// its kernel TCP counters were not read for every turn (never OK); OK otherwise, saying when ECN marks
// rose without retransmissions (congestion control at work).
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports {

struct LosslessRule {
  // CONGESTED below this share of the median interval (p1 / p50 of a receiver's 100 ms goodput).
  double stall_share = 0.5;
};

struct LosslessHost {
  std::string host;
  std::string verdict;                // "LOSSY", "CONGESTED", "unverified" or "OK"
  std::vector<std::string> evidence;  // in words, each naming the host, the counter and its delta
};

// Every host of the TCP incast records (microbench.incast, transport tcp), in the order the records
// first name them.
std::vector<LosslessHost> judge_tcp_incast(const std::vector<json>& records, const LosslessRule& rule = {});

}  // namespace rocebench::reports
