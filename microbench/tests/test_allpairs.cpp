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

TEST(NeighbourRounds, EachHostWithItsTwoRingNeighboursAndNoHostTwiceInARound) {
  for (int n = 3; n <= 17; ++n) {
    const auto rounds = neighbour_rounds(n);
    EXPECT_EQ(static_cast<int>(rounds.size()), n % 2 ? 3 : 2) << n;
    std::set<HostPair> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (const auto& [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second && busy.insert(b).second) << "host twice in a round, n=" << n;
        EXPECT_TRUE(seen.insert({a, b}).second) << "pair twice, n=" << n;
      }
    }
    std::set<HostPair> ring;
    for (int h = 0; h < n; ++h) ring.insert({std::min(h, (h + 1) % n), std::max(h, (h + 1) % n)});
    EXPECT_EQ(seen, ring) << n;
  }
  EXPECT_EQ(neighbour_rounds(2), (std::vector<std::vector<HostPair>>{{{0, 1}}}));
  EXPECT_TRUE(neighbour_rounds(1).empty());
  EXPECT_EQ(schedule("all", 5), tournament(5));
}
