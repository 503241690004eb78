#include "rocebench/reports/links.hpp"

#include <algorithm>
#include <limits>
#include <map>

namespace rocebench::reports {

double best_of(const std::vector<PairMeasure>& measures, const FlagRule& rule) {
  double best = rule.higher_is_better ? 0.0 : std::numeric_limits<double>::infinity();
  for (const auto& m : measures) best = rule.higher_is_better ? std::max(best, m.value) : std::min(best, m.value);
  return best;
}

bool is_flagged(double value, double best, const FlagRule& rule) {
  return rule.higher_is_better ? value < rule.bw_fraction * best : value > rule.lat_factor * best;
}

std::vector<std::size_t> flagged(const std::vector<PairMeasure>& measures, const FlagRule& rule) {
  const double best = best_of(measures, rule);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < measures.size(); ++i) {
    if (is_flagged(measures[i].value, best, rule)) out.push_back(i);
  }
  return out;
}

std::vector<int> bad_hosts(const std::vector<HostPair>& measured, const std::vector<HostPair>& still_bad) {
  std::map<int, int> pairs_of;  // host → the pairs it measured
  for (const auto& [a, b] : measured) {
    ++pairs_of[a];
    ++pairs_of[b];
  }
  std::map<int, std::vector<int>> partners;  // host → its partners in bad pairs
  for (const auto& [a, b] : still_bad) {
    partners[a].push_back(b);
    partners[b].push_back(a);
  }
  // `partner` is fine elsewhere when at most half of its pairs other than the one with `host` are bad.
  auto fine_elsewhere = [&](int partner) { return 2 * (static_cast<int>(partners[partner].size()) - 1) <= pairs_of[partner] - 1; };
  std::vector<int> out;
  for (auto& [host, with] : partners) {
    const auto blamed = std::count_if(with.begin(), with.end(), fine_elsewhere);
    if (2 * blamed > pairs_of[host]) out.push_back(host);
  }
  return out;
}

PairsJudgement judge_pairs(const std::vector<PairHistory>& pairs, const RetestPolicy& policy) {
  PairsJudgement j;
  std::vector<PairMeasure> first;
  for (const auto& p : pairs) first.push_back({p.pair, p.first});
  j.best = best_of(first, policy.rule);
  j.flagged = flagged(first, policy.rule);
  std::vector<HostPair> bad;
  for (const std::size_t i : j.flagged) {
    if (!is_flagged(pairs[i].latest(), j.best, policy.rule)) continue;
    j.still_bad.push_back(i);
    bad.push_back(pairs[i].pair);
  }
  std::vector<HostPair> measured;
  for (const auto& p : pairs) measured.push_back(p.pair);
  j.bad_hosts = bad_hosts(measured, bad);
  auto named = [&](int host) { return std::find(j.bad_hosts.begin(), j.bad_hosts.end(), host) != j.bad_hosts.end(); };
  for (const std::size_t i : j.still_bad) {
    const auto done = static_cast<int>(pairs[i].retests.size());
    if (done >= policy.max_retests) continue;
    // Once retested, a pair a bad host explains is settled; a stray one may be noise: once more.
    if (done == 0 || !(named(pairs[i].pair.first) || named(pairs[i].pair.second))) j.retest.push_back(i);
  }
  return j;
}

}  // namespace rocebench::reports
