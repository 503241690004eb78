// The line each allreduce peer of allreduce_vs_peers.sh prints per size, written once for both:
//   BYTES AVG_US ALGBW_GBPS BUSBW_GBPS FASTEST_OP_BUSBW_GBPS MEDIAN_OP_BUSBW_GBPS
// from the slowest rank's loop and each iteration's slowest rank (seconds), with nccl-tests' busbw
// factor 2(n-1)/n; the fastest and median operations as rocebench's samples.min and samples.median.
#pragma once
#include <algorithm>
#include <cstdio>
#include <vector>

inline void print_peer_row(long bytes, int ranks, double loop_s, std::vector<double> each_s) {
  std::sort(each_s.begin(), each_s.end());
  const std::size_t mid = each_s.size() / 2;
  const double median = each_s.size() % 2 ? each_s[mid] : (each_s[mid - 1] + each_s[mid]) / 2;
  const double avg = loop_s / static_cast<double>(each_s.size()), bus = 2.0 * (ranks - 1) / ranks;
  const auto busbw = [&](double seconds) { return static_cast<double>(bytes) / seconds / 1e9 * bus; };
  std::printf("%ld %.1f %.4f %.4f %.4f %.4f\n", bytes, avg * 1e6, busbw(avg) / bus, busbw(avg), busbw(each_s.front()),
              busbw(median));
  std::fflush(stdout);
}
