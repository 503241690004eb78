// The bad-link rule of the all-pairs matrix: flagging against the best pair, retests, bad hosts.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "rocebench/reports/links.hpp"

using namespace rocebench::reports;

namespace {

// Every unordered pair of n hosts, (a, b) with a < b.
std::vector<HostPair> every_pair(int n) {
  std::vector<HostPair> out;
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) out.emplace_back(a, b);
  }
  return out;
}

}  // namespace

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
  EXPECT_EQ(bad_hosts(every_pair(8), bad), (std::vector<int>{5}));
  EXPECT_TRUE(bad_hosts(every_pair(8), {{1, 2}}).empty());
  EXPECT_TRUE(bad_hosts(every_pair(8), {}).empty());
  // Two hosts: the one pair is all each of them has, so both are named.
  EXPECT_EQ(bad_hosts(every_pair(2), {{0, 1}}), (std::vector<int>{0, 1}));
}

TEST(BadHosts, TwoSlowHostsAreBothNamedAndAnAllSlowNetworkBlamesNobody) {
  // 8 hosts, 3 and 5 slow: every pair with either stays bad, (3,5) included.
  std::vector<HostPair> bad;
  for (int h = 0; h < 8; ++h) {
    for (int slow : {3, 5}) {
      if (h != slow && !(h == 5 && slow == 3)) bad.emplace_back(std::min(h, slow), std::max(h, slow));
    }
  }
  EXPECT_EQ(bad_hosts(every_pair(8), bad), (std::vector<int>{3, 5}));
  // Every pair bad: no partner is fine elsewhere, so no host is singled out.
  const std::vector<HostPair> all = every_pair(6);
  EXPECT_TRUE(bad_hosts(every_pair(6), all).empty());
  // 3 hosts, 2 slow: its two pairs stay bad, its partners are fine with each other.
  EXPECT_EQ(bad_hosts(every_pair(3), {{0, 2}, {1, 2}}), (std::vector<int>{2}));
}

TEST(BadHosts, WithItsNeighboursOnlyASlowHostIsNamedByItsTwoPairs) {
  // A quick check: 8 hosts in a ring, each measured with its two neighbours; host 5 slow.
  std::vector<HostPair> ring;
  for (int h = 0; h < 8; ++h) ring.emplace_back(std::min(h, (h + 1) % 8), std::max(h, (h + 1) % 8));
  EXPECT_EQ(bad_hosts(ring, {{4, 5}, {5, 6}}), (std::vector<int>{5}));
  // One bad pair of two: either host may be slow, neither is named from it alone.
  EXPECT_TRUE(bad_hosts(ring, {{4, 5}}).empty());
  // The all-pairs rule would need more than half of 7 pairs: counted over 2, both of 5's are enough.
  EXPECT_TRUE(bad_hosts(every_pair(8), {{4, 5}, {5, 6}}).empty());
}

namespace {

// 8 hosts measured at 1.0 Gb/s (about), host 5 at half that; `noise` pairs read low too.
std::vector<PairHistory> first_pass(const std::set<HostPair>& noise = {}) {
  std::vector<PairHistory> out;
  for (const auto& pair : every_pair(8)) {
    const bool slow = pair.first == 5 || pair.second == 5 || noise.contains(pair);
    out.push_back({pair, slow ? 0.5 : 0.95 + 0.01 * (pair.first % 3), {}});
  }
  return out;
}

std::set<HostPair> pairs_at(const std::vector<PairHistory>& h, const std::vector<std::size_t>& idx) {
  std::set<HostPair> out;
  for (auto i : idx) out.insert(h[i].pair);
  return out;
}

std::set<HostPair> with_host(int host, int n) {
  std::set<HostPair> out;
  for (int h = 0; h < n; ++h) {
    if (h != host) out.insert({std::min(h, host), std::max(h, host)});
  }
  return out;
}

}  // namespace

TEST(Retest, FlaggedPairsAreRetestedOnceAndTheSlowHostSettlesIt) {
  const RetestPolicy policy;
  auto h = first_pass({{1, 2}});
  auto j = judge_pairs(h, policy);
  EXPECT_DOUBLE_EQ(j.best, 0.97);
  std::set<HostPair> expected = with_host(5, 8);
  expected.insert({1, 2});
  EXPECT_EQ(pairs_at(h, j.flagged), expected);
  EXPECT_EQ(pairs_at(h, j.retest), expected);  // every flagged pair, once

  // Retests: host 5's pairs stay slow; the noisy pair (1,2) stays slow once too.
  for (auto i : j.retest) h[i].retests.push_back(0.5);
  j = judge_pairs(h, policy);
  EXPECT_EQ(j.bad_hosts, (std::vector<int>{5}));
  EXPECT_EQ(pairs_at(h, j.retest), (std::set<HostPair>{{1, 2}}));  // only the stray pair, again

  // Its second retest is fine: it was noise. Nothing left to retest; host 5 alone is bad.
  for (auto i : j.retest) h[i].retests.push_back(0.96);
  j = judge_pairs(h, policy);
  EXPECT_TRUE(j.retest.empty());
  EXPECT_EQ(pairs_at(h, j.still_bad), with_host(5, 8));
  EXPECT_EQ(j.bad_hosts, (std::vector<int>{5}));
}

TEST(Retest, APairThatRecoversIsFineAndRetestsStopAtTheLimit) {
  RetestPolicy policy;
  auto h = first_pass({{1, 2}});
  auto j = judge_pairs(h, policy);
  for (auto i : j.retest) h[i].retests.push_back(h[i].pair == HostPair{1, 2} ? 0.5 : 0.96);  // host 5 recovers
  j = judge_pairs(h, policy);
  EXPECT_TRUE(j.bad_hosts.empty());
  EXPECT_EQ(pairs_at(h, j.still_bad), (std::set<HostPair>{{1, 2}}));
  EXPECT_EQ(pairs_at(h, j.retest), (std::set<HostPair>{{1, 2}}));
  for (auto i : j.retest) h[i].retests.push_back(0.5);
  j = judge_pairs(h, policy);
  EXPECT_TRUE(j.retest.empty()) << "at most max_retests (2) retests of a pair";
  EXPECT_EQ(pairs_at(h, j.still_bad), (std::set<HostPair>{{1, 2}}));
  EXPECT_TRUE(j.bad_hosts.empty()) << "one stray pair blames no host";

  // No retests: the first pass is the verdict.
  policy.max_retests = 0;
  h = first_pass();
  j = judge_pairs(h, policy);
  EXPECT_TRUE(j.retest.empty());
  EXPECT_EQ(pairs_at(h, j.still_bad), with_host(5, 8));
  EXPECT_EQ(j.bad_hosts, (std::vector<int>{5}));
}

TEST(Retest, LatencyFlagsAboveTheFactorOfTheBest) {
  const RetestPolicy policy{.rule = {.higher_is_better = false}};
  std::vector<PairHistory> h{{{0, 1}, 10, {}}, {{2, 3}, 25, {}}, {{0, 2}, 12, {}}, {{1, 3}, 20, {}},
                             {{0, 3}, 22, {}}, {{1, 2}, 11, {}}};
  auto j = judge_pairs(h, policy);
  EXPECT_DOUBLE_EQ(j.best, 10);
  EXPECT_EQ(j.flagged, (std::vector<std::size_t>{1, 4}));  // 25 and 22 > 21; 20 is not
  h[1].retests = {30};
  h[4].retests = {30};
  j = judge_pairs(h, policy);
  EXPECT_EQ(j.bad_hosts, (std::vector<int>{3}));  // (2,3) and (0,3) stay slow, 3 is in both
}
