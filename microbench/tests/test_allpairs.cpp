#include <gtest/gtest.h>

#include <set>

#include "rocebench/microbench/allpairs.hpp"

using namespace rocebench::microbench;

TEST(Tournament, EveryPairOnceAndNoHostTwiceInARound) {
  for (int n = 2; n <= 17; ++n) {
    const auto rounds = tournament(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 ? n : n - 1) << n;
    std::set<HostPair> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      EXPECT_EQ(static_cast<int>(round.size()), n / 2) << n;  // odd n: one host has a bye
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "host twice in a round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair twice, n=" << n;
      }
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2) << n;
  }
  EXPECT_TRUE(tournament(1).empty());
}

TEST(Flagging, BandwidthBelowFractionOfBestAndLatencyAboveFactor) {
  FlagRule bw;
  const std::vector<PairMeasure> m{{{0, 1}, 100}, {{2, 3}, 93.5}, {{0, 2}, 92.9}, {{1, 3}, 50}};
  EXPECT_EQ(best_of(m, bw), 100);
  EXPECT_EQ(flagged(m, bw), (std::vector<std::size_t>{2, 3}));
  bw.bw_fraction = 0.5;
  EXPECT_EQ(flagged(m, bw), (std::vector<std::size_t>{}));

  FlagRule lat{.higher_is_better = false};
  const std::vector<PairMeasure> l{{{0, 1}, 10}, {{2, 3}, 21}, {{0, 2}, 21.5}};
  EXPECT_EQ(best_of(l, lat), 10);
  EXPECT_EQ(flagged(l, lat), (std::vector<std::size_t>{2}));
}

TEST(BadHosts, AHostInMostBadPairsIsNamedAndALoneBadPairIsNot) {
  // 8 hosts; every pair with host 5 stays bad, plus one stray pair 1-2.
  std::vector<HostPair> bad;
  for (int h = 0; h < 8; ++h) {
    if (h != 5) bad.emplace_back(std::min(h, 5), std::max(h, 5));
  }
  bad.emplace_back(1, 2);
  EXPECT_EQ(bad_hosts(8, bad), (std::vector<int>{5}));
  EXPECT_TRUE(bad_hosts(8, {{1, 2}}).empty());
  EXPECT_TRUE(bad_hosts(8, {}).empty());
  // Two hosts: the one pair is all each of them has, so both are named.
  EXPECT_EQ(bad_hosts(2, {{0, 1}}), (std::vector<int>{0, 1}));
}
