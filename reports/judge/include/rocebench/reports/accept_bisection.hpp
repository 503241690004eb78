#pragma once
// The allreduce stage's search for the node that slows a collective: bisection, the rounds of the
// search against a threshold, and the same search replayed from an acceptance's records.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/accept_profile.hpp"
#include "rocebench/reports/accept_records.hpp"
#include "rocebench/reports/accept_verdicts.hpp"

namespace rocebench::reports::accept {

// A ring allreduce's bus bandwidth in Gb/s from its run's records (0 when it has no ok figure).
double allreduce_busbw_Gbps(const std::vector<json>& records);

// Bisection for the node that slows a collective. `slow(group)` runs the collective on that group of
// node indices and says whether it fell below threshold. The whole group is known slow; each run
// tests one half of the suspects (a single suspect with a partner already found fine). The node left
// is named only when two runs smaller than the whole group were slow with it and fine nodes alone (a
// retest in isolation): ceil(log2 n) + 1 runs, one more when it was reached by elimination. Empty
// `slow`: no single node explains it (the group is slow as a whole, or the slowness did not repeat).
struct Bisection {
  std::vector<int> slow;  // the isolated node, or none
  int runs = 0;           // collective runs made
};
Bisection bisect(int n, const std::function<bool(const std::vector<int>& group)>& slow);

// What an allreduce's busbw is judged against: the profile's fraction of the rated link, or of the
// median pair of the link matrix. Undefined (0) with neither.
struct AllreduceThreshold {
  double Gbps = 0;
  std::string against;  // "0.7 x the median pair's 1.234"
  bool defined() const { return Gbps > 0; }
};
AllreduceThreshold allreduce_threshold(const Profile& profile, double median_pair_Gbps);
bool group_slow(double busbw_Gbps, const AllreduceThreshold& t);

// The allreduce stage's search, in rounds (three at most, while two nodes remain): the whole group;
// when it is slow, once more; when slow again, bisection for the node that slows it, and the next
// round without the node it names. `busbw(label, group)` runs the allreduce on that group (accept) or
// finds the recorded run (a judge replaying it), nullopt when there is none: the search stops there.
using AllreduceRunner = std::function<std::optional<double>(const std::string& label, const std::vector<Node>& group)>;
struct AllreduceRound {
  std::vector<Node> group;
  std::vector<std::string> log;  // each run's group and figure, the evidence of a SLOW
  double full = 0;               // the whole group's last busbw
  bool slow = false;             // the whole group was slow, also on retry
  Bisection bisection;
  std::vector<Node> isolated;
};
struct AllreduceSearch {
  std::vector<AllreduceRound> rounds;  // the rounds that ended
  std::string missing;                 // the run the search needed and did not get ("allreduce-retry on a+b")
  std::vector<Node> unresolved;        // the nodes it was judging then
};
AllreduceSearch allreduce_search(const std::vector<Node>& group, const AllreduceThreshold& t, const AllreduceRunner& busbw);
// The allreduce runs an acceptance recorded, replayed: the k-th request of a group gets the k-th
// recorded run of that group.
AllreduceRunner recorded_allreduce(const Acceptance& a);
// The search's verdicts: ok, SLOW for the isolated nodes, a cluster SLOW no node explains, and
// UNVERIFIED for the nodes a missing run left unjudged.
void judge_allreduce(Verdicts& v, const AllreduceSearch& search, const AllreduceThreshold& t);

}  // namespace rocebench::reports::accept
