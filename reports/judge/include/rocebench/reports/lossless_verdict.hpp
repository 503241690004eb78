#pragma once
// The lossless-under-load verdict (issue #41), from microbench.incast records alone, so a saved run
// re-judges the same; over tcp from the kernel's TCP counters, over verbs from the NIC's (the shared
// vocabulary of common/nic_counters.hpp). Per host: LOSSY (fail) when it is the host that explains the
// turns in which senders sent again (tcp: retransmitted segments; verbs: sequence NAKs, ACK timeouts,
// retries exhausted) more than the rule's share of what they sent: the all-pairs matrix's bad-host rule
// over every turn's (receiver, sender) pairs, each host seen as its link in and its link out, so a
// receiver whose every sender lost is named alone; or every host of a lossy pair when no one host
// explains them; or when a drop no pair needs rose on it (receive discards, a pause storm stopped).
// CONGESTED (warn) when, as the receiver, its 100 ms goodput p1 fell below a share of its p50 (goodput
// stalled), or CNPs were ignored or pause storms warned of. unverified when its loss counters were not
// read for every turn (never OK); OK otherwise, saying when ECN marks or CNPs rose without loss
// (congestion control at work).
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports {

struct LosslessRule {
  // CONGESTED below this share of the median interval (p1 / p50 of a receiver's 100 ms goodput).
  double stall_share = 0.5;
  // A turn's sender is lossy when it retransmitted more than this share of the segments it sent. Measured
  // on the netns bed (4 hosts, 200-500 Mbit/s tbf): the shaper's own tail drops under incast cost 0-3
  // segments of ~20,000 (up to 0.02%), 1% netem loss on one link 0.9-1.9%.
  double retransmit_share = 0.001;
};

struct LosslessHost {
  std::string host;
  std::string verdict;                // "LOSSY", "CONGESTED", "unverified" or "OK"
  std::vector<std::string> evidence;  // in words, each naming the host, the counter and its delta
};

// Every host of the incast records over `transport` (microbench.incast: tcp or verbs), in the order the
// records first name them.
std::vector<LosslessHost> judge_incast(const std::vector<json>& records, const std::string& transport, const LosslessRule& rule = {});

}  // namespace rocebench::reports
