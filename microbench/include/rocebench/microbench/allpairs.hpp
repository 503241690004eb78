#pragma once
// The all-pairs link matrix: N hosts, N-1 rounds of N/2 concurrent disjoint pairs (round-robin
// tournament), slow pairs retested alone as reports' bad-link rule asks, and the hosts it names; or,
// for a quick check, each host with its two neighbours only.
#include <string>
#include <utility>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/reports/links.hpp"

namespace rocebench::microbench {

using reports::HostPair;  // (server, client) host indices

// Circle method: host 0 stays, the others rotate. Odd n adds a bye (that host sits the round out).
// Every unordered pair appears exactly once; no host appears twice in a round.
std::vector<std::vector<HostPair>> tournament(int n);
// A quick check's schedule: each host with its two ring neighbours (i, i+1 mod n), in 2 rounds of
// disjoint pairs (3 when n is odd: the pair that closes the ring alone); n = 2: the one pair.
std::vector<std::vector<HostPair>> neighbour_rounds(int n);
// The schedule `pairs` ("all" or "neighbours") names.
std::vector<std::vector<HostPair>> schedule(const std::string& pairs, int n);

StepKind allpairs_step();
int allpairs_main(const Args& args);

}  // namespace rocebench::microbench
