#include "rocebench/reports/accept_bisection.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "accept_nodes.hpp"

namespace rocebench::reports::accept {

Bisection bisect(int n, const std::function<bool(const std::vector<int>&)>& slow) {
  Bisection b;
  std::vector<int> suspects(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) suspects[static_cast<std::size_t>(i)] = i;
  std::set<int> cleared;
  std::vector<std::vector<int>> slow_runs;
  auto suspected = [&](int h) { return std::find(suspects.begin(), suspects.end(), h) != suspects.end(); };
  // Runs `group`: slow keeps the suspects it holds, not slow clears all of it.
  auto test = [&](const std::vector<int>& group) {
    ++b.runs;
    const bool was_slow = slow(group);
    if (was_slow) {
      slow_runs.push_back(group);
      std::erase_if(suspects, [&](int h) { return std::find(group.begin(), group.end(), h) == group.end(); });
    } else {
      cleared.insert(group.begin(), group.end());
      std::erase_if(suspects, [&](int h) { return cleared.count(h) > 0; });
    }
    return was_slow;
  };
  // A single suspect runs with a partner that is not suspected: a cleared node if there is one (a
  // single slow node is otherwise still the one every slow group shares). Empty when there is none.
  auto with_partner = [&](int suspect) {
    std::vector<int> group{suspect};
    for (int h = 0; h < n && group.size() == 1; ++h) {
      if (cleared.count(h)) group.push_back(h);
    }
    for (int h = 0; h < n && group.size() == 1; ++h) {
      if (!suspected(h)) group.push_back(h);
    }
    return group.size() == 2 ? group : std::vector<int>{};
  };
  while (suspects.size() > 1) {
    std::vector<int> group(suspects.begin(), suspects.begin() + static_cast<std::ptrdiff_t>(suspects.size() / 2));
    if (group.size() == 1) group = with_partner(group.front());
    if (group.empty() && suspects.size() > 2) group = {suspects[0], suspects[1]};  // every node is suspected
    if (group.empty()) return b;  // two nodes and no third to tell them apart
    test(group);
  }
  if (suspects.size() != 1) return b;
  if (cleared.empty()) {  // every run was slow: first find two nodes that are fine together
    std::vector<int> others;
    for (int h = 0; h < n && others.size() < 2; ++h) {
      if (!suspected(h)) others.push_back(h);
    }
    if (others.size() < 2 || test(others)) return b;  // no run is fine: the group is slow as a whole
  }
  // A node is named after two runs smaller than the whole group were slow with it and with nodes
  // found fine only: the whole group's slowness may be the network's (or the hosts' CPUs'), and one
  // slow run may be noise, which retesting in isolation filters before a node is failed.
  const int node = suspects.front();
  auto pins = [&](const std::vector<int>& run) {
    return static_cast<int>(run.size()) < n &&
           std::all_of(run.begin(), run.end(), [&](int h) { return h == node || cleared.count(h) > 0; });
  };
  for (auto evidence = std::count_if(slow_runs.begin(), slow_runs.end(), pins); evidence < 2; ++evidence) {
    if (!test(with_partner(node))) return b;
  }
  b.slow = {node};
  return b;
}

double allreduce_busbw_Gbps(const std::vector<json>& records) {
  for (const auto& r : records) {
    if (r.value("step", "") == "collectives.allreduce" && r.value("status", "") == "ok") {
      return r.value("metrics", json::object()).value("busbw_GBps", 0.0) * 8;
    }
  }
  return 0;
}

namespace {

using detail::rows;

std::vector<std::string> names(const std::vector<Node>& nodes) {
  std::vector<std::string> out;
  for (const auto& n : nodes) out.push_back(n.name);
  return out;
}

// A run the search needs and the runner does not have.
struct NoSuchRun {};

std::vector<std::string> sorted_rows(const std::vector<Node>& group) {
  std::vector<std::string> out = rows(group);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

AllreduceThreshold allreduce_threshold(const Profile& profile, double median_pair_Gbps) {
  if (profile.rated_link_Gbps > 0) {
    return {profile.busbw_fraction_of_rated * profile.rated_link_Gbps,
            fmt::format("{} x the rated link's {:.3f}", profile.busbw_fraction_of_rated, profile.rated_link_Gbps)};
  }
  if (median_pair_Gbps <= 0) return {};  // no figure to judge against: the links stage said why
  return {profile.busbw_fraction * median_pair_Gbps, fmt::format("{} x the median pair's {:.3f}", profile.busbw_fraction, median_pair_Gbps)};
}

bool group_slow(double busbw_Gbps, const AllreduceThreshold& t) { return busbw_Gbps < t.Gbps; }

AllreduceSearch allreduce_search(const std::vector<Node>& nodes, const AllreduceThreshold& t, const AllreduceRunner& busbw) {
  AllreduceSearch out;
  std::vector<Node> group = nodes;
  for (int round = 0; round < 3 && group.size() >= 2; ++round) {
    AllreduceRound r;
    r.group = group;
    auto slow = [&](const std::string& label, const std::vector<Node>& g, double* seen = nullptr) {
      const std::optional<double> Gbps = busbw(label, g);
      if (!Gbps) {
        out.missing = fmt::format("{} on {}", label, fmt::join(names(g), "+"));
        throw NoSuchRun{};
      }
      if (seen) *seen = *Gbps;
      const std::string who = g.size() == group.size() ? fmt::format("all {}", g.size()) : fmt::format("{}", fmt::join(names(g), "+"));
      r.log.push_back(fmt::format("{} {:.3f}{}", who, *Gbps, group_slow(*Gbps, t) ? " slow" : ""));
      return group_slow(*Gbps, t);
    };
    try {
      if (!slow("allreduce", group, &r.full) || !slow("allreduce-retry", group, &r.full)) {
        out.rounds.push_back(std::move(r));
        return out;
      }
      r.slow = true;
      r.bisection = bisect(static_cast<int>(group.size()), [&](const std::vector<int>& members) {
        std::vector<Node> sub;
        for (int i : members) sub.push_back(group[static_cast<std::size_t>(i)]);
        return slow(fmt::format("bisect-{}", members.size()), sub);
      });
    } catch (const NoSuchRun&) {
      out.unresolved = group;
      return out;
    }
    std::vector<Node> rest;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const bool isolated = std::find(r.bisection.slow.begin(), r.bisection.slow.end(), static_cast<int>(i)) != r.bisection.slow.end();
      (isolated ? r.isolated : rest).push_back(group[i]);
    }
    const bool none = r.isolated.empty();
    out.rounds.push_back(std::move(r));
    if (none) return out;
    group = rest;
  }
  return out;
}

AllreduceRunner recorded_allreduce(const Acceptance& a) {
  struct Run {
    std::vector<std::string> hosts;
    double Gbps;
  };
  auto runs = std::make_shared<std::vector<Run>>();
  for (const auto& s : a.runs) {
    if (s.stage == "allreduce") runs->push_back({sorted_rows(s.group), allreduce_busbw_Gbps(s.records)});
  }
  auto used = std::make_shared<std::map<std::vector<std::string>, std::size_t>>();  // group -> its runs replayed
  return [runs, used](const std::string&, const std::vector<Node>& group) -> std::optional<double> {
    const auto key = sorted_rows(group);
    std::size_t& k = (*used)[key];
    std::size_t seen = 0;
    for (const auto& r : *runs) {
      if (r.hosts == key && seen++ == k) {
        ++k;
        return r.Gbps;
      }
    }
    return std::nullopt;
  };
}

void judge_allreduce(Verdicts& v, const AllreduceSearch& search, const AllreduceThreshold& t) {
  for (const auto& r : search.rounds) {
    for (const auto& n : r.group) v.figure(n.host, kBusbwGbps, r.full);  // a later round (without the slow node) overrides
    if (!r.slow) {
      for (const auto& n : r.group) v.stage(n.host, "allreduce", fmt::format("ok ({:.3f} Gb/s busbw)", r.full));
      continue;
    }
    const std::string evidence = fmt::format("allreduce busbw (Gb/s) against {:.3f} ({}): {}; bisection: {} run(s)", t.Gbps, t.against,
                                             fmt::join(r.log, "; "), r.bisection.runs);
    if (r.isolated.empty()) {
      v.fail_cluster({kSlow, "allreduce", evidence + "; no single node isolated"});
      for (const auto& n : r.group) v.stage(n.host, "allreduce", fmt::format("slow with the group ({:.3f} Gb/s busbw)", r.full));
      continue;
    }
    for (const auto& n : r.isolated) v.fail(n.host, {kSlow, "allreduce", evidence});
  }
  if (search.missing.empty()) return;
  for (const auto& n : search.unresolved) {
    v.fail(n.host, {kUnverified, "allreduce", fmt::format("against {:.3f} Gb/s ({}), the search for the node that slows the allreduce "
                                                          "needs a run this acceptance did not make: {}", t.Gbps, t.against, search.missing)});
  }
}

}  // namespace rocebench::reports::accept
