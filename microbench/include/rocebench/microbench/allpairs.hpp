#pragma once
// The all-pairs link matrix: N hosts, N-1 rounds of N/2 concurrent disjoint pairs (round-robin
// tournament), flagging of slow pairs against the best one, and naming the hosts that stay bad.
#include <string>
#include <utility>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::microbench {

using HostPair = std::pair<int, int>;  // (server, client) host indices

// Circle method: host 0 stays, the others rotate. Odd n adds a bye (that host sits the round out).
// Every unordered pair appears exactly once; no host appears twice in a round.
std::vector<std::vector<HostPair>> tournament(int n);

struct PairMeasure {
  HostPair pair;
  double value = 0;  // bandwidth (higher is better) or latency (lower is better)
};

struct FlagRule {
  bool higher_is_better = true;
  double bw_fraction = 0.93;   // flag bandwidth below this fraction of the best
  double lat_factor = 2.1;     // flag latency above this multiple of the best
};

// The best value and the indices of the measures that the rule flags against it.
double best_of(const std::vector<PairMeasure>& measures, const FlagRule& rule);
bool is_flagged(double value, double best, const FlagRule& rule);
std::vector<std::size_t> flagged(const std::vector<PairMeasure>& measures, const FlagRule& rule);

// The hosts to blame for pairs that stayed bad: a host is named when more than half of the pairs
// it was in stayed bad. `n` hosts, every host in n-1 pairs.
std::vector<int> bad_hosts(int n, const std::vector<HostPair>& still_bad);

StepKind allpairs_step();
int allpairs_main(const Args& args);

}  // namespace rocebench::microbench
