// What each allreduce peer of allreduce_vs_peers.sh does per size, written once for both: its rank's
// median operation (to be max-reduced with its loop), and the line rank 0 prints:
//   BYTES AVG_US ALGBW_GBPS BUSBW_GBPS FASTEST_OP_BUSBW_GBPS MEDIAN_OP_BUSBW_GBPS
// from the slowest rank's loop, the slowest rank's median operation, and each iteration's slowest
// rank (seconds), with nccl-tests' busbw factor 2(n-1)/n; the fastest operation is the least of
// each iteration's slowest rank. The same three as rocebench's time_us, time_us_p50 and samples.min.
#pragma once
#include <algorithm>
#include <cstdio>
#include <vector>

// rocebench's median_of (common/stats), again: the peers build with g++ alone, without its libraries.
inline double median_op(std::vector<double> each_s) {
  std::sort(each_s.begin(), each_s.end());
  const std::size_t mid = each_s.size() / 2;
  return each_s.size() % 2 ? each_s[mid] : (each_s[mid - 1] + each_s[mid]) / 2;
}

inline void print_peer_row(long bytes, int ranks, double loop_s, double median_op_s, const std::vector<double>& each_s) {
  const double fastest = *std::min_element(each_s.begin(), each_s.end());
  const double avg = loop_s / static_cast<double>(each_s.size()), bus = 2.0 * (ranks - 1) / ranks;
  const auto busbw = [&](double seconds) { return static_cast<double>(bytes) / seconds / 1e9 * bus; };
  std::printf("%ld %.1f %.4f %.4f %.4f %.4f\n", bytes, avg * 1e6, busbw(avg) / bus, busbw(avg), busbw(fastest),
              busbw(median_op_s));
  std::fflush(stdout);
}
