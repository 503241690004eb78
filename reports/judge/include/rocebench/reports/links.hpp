#pragma once
// The bad-link rule of the all-pairs link matrix: which pairs are slow against the best one, which
// stay slow when retested alone, which to retest next, and which hosts explain them. A pure function
// of the measurements: microbench.allpairs asks it online what to retest, and the acceptance's judge
// (judge_links) asks it again offline from the records, under the profile it is given.
#include <cstddef>
#include <utility>
#include <vector>

namespace rocebench::reports {

using HostPair = std::pair<int, int>;  // (server, client) host indices

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

// The hosts to blame for pairs that stayed bad: a host is bad when more than half of the pairs it
// measured stay bad with partners that are fine elsewhere (at most half of a partner's other pairs
// bad). A slow host is named; its partners, each with one bad pair, are not; when everything is
// slow, nobody is singled out. `measured`: every pair measured (all of them in the matrix, each
// host with its two neighbours in a quick check).
std::vector<int> bad_hosts(const std::vector<HostPair>& measured, const std::vector<HostPair>& still_bad);

// One pair's measurements: the first pass (concurrent rounds), then each isolated retest.
struct PairHistory {
  HostPair pair;
  double first = 0;
  std::vector<double> retests;
  double latest() const { return retests.empty() ? first : retests.back(); }
};

struct RetestPolicy {
  FlagRule rule;
  int max_retests = 2;  // isolated retests of one pair at most (0: judge the first pass alone)
};

// The verdict so far, decided from the measurements alone. The best value is the first pass's.
// A flagged pair is retested alone; if it stays bad and no bad host explains it (a stray pair,
// likely noise on a shared machine), it is retested again, up to max_retests. A pair is bad when
// its latest measurement is still flagged. `retest` lists the pairs to measure next (empty: done).
struct PairsJudgement {
  double best = 0;
  std::vector<std::size_t> flagged;    // by the first pass
  std::vector<std::size_t> retest;     // measure these again, alone, one after another
  std::vector<std::size_t> still_bad;  // latest measurement flagged
  std::vector<int> bad_hosts;          // of still_bad
};
PairsJudgement judge_pairs(const std::vector<PairHistory>& pairs, const RetestPolicy& policy);

}  // namespace rocebench::reports
