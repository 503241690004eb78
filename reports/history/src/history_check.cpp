#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

std::map<std::string, RunNoise> run_noise(const std::vector<HistorySeries>& series) {
  std::map<std::string, RunNoise> out;
  std::vector<double> x;
  for (const auto& s : series) {
    if (s.points.size() < 5) continue;
    x.clear();
    for (const auto& p : s.points) x.push_back(p.value);
    const double m = median_of(x);
    if (m == 0) continue;
    out[MetricKey{s.step, json::parse(s.params), s.world, s.metric}.id()] = {mad_sigma(x) / std::abs(m), x.size()};
  }
  return out;
}

std::vector<SeriesCheck> check_history(const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                                       const CheckOptions& o) {
  // Runs come in run order, as the points of a series do.
  std::map<std::string, std::string> newest;  // machine -> its newest night (the last run is in it)
  std::map<std::string, std::size_t> place;   // run -> its place in run order
  for (const auto& r : runs) {
    newest[r.machine] = r.night;
    place.emplace(r.run, place.size());
  }
  const auto since = place.find(o.since);
  if (!o.since.empty() && since == place.end()) throw InputError(fmt::format("--since {}: no such run in the history", o.since));

  std::vector<SeriesCheck> out;
  std::vector<double> x;
  for (const auto& s : series) {
    if (s.points.empty() || s.points.back().night != newest[s.machine]) continue;  // not measured by the newest night: unmeasured()
    x.clear();
    for (const auto& p : s.points) x.push_back(p.value);
    // The last `window` nights, each with its reruns; or every run from `since` on.
    std::size_t first_new = x.size();
    if (!o.since.empty()) {
      first_new = 0;
      while (first_new < x.size() && place.at(s.points[first_new].run) < since->second) ++first_new;
    } else {
      for (std::size_t nights = 0; first_new > 0; --first_new) {
        if (s.points[first_new - 1].night != (first_new < x.size() ? s.points[first_new].night : "") && ++nights > o.window) break;
      }
    }
    JudgeOptions judging = o.judge;
    for (std::size_t i = 0; i < x.size(); ++i) judging.is_rerun.push_back(i > 0 && s.points[i].night == s.points[i - 1].night);
    SeriesCheck c{&s, e_divisive(x, o.judge.detect), {}};
    const Better direction = declared_shapes().better(s.step, s.metric);
    c.verdict = judge(x, first_new, c.changes, direction == Better::higher, judging);
    // A change seen while the machine was busy may be the other tasks': the nights it rests on ask for a rerun.
    if (c.verdict.call == Call::improved || c.verdict.call == Call::regressed) {
      const auto busiest = std::max_element(s.points.begin() + static_cast<std::ptrdiff_t>(first_new), s.points.end(),
                                            [](const HistoryPoint& a, const HistoryPoint& b) {
                                              return a.cpu_pressure_pct.value_or(0) < b.cpu_pressure_pct.value_or(0);
                                            });
      if (busiest != s.points.end() && busiest->cpu_pressure_pct.value_or(0) >= kCpuContendedPct) {
        c.verdict.call = Call::unknown;
        c.verdict.more_runs = 1;
        c.verdict.why += fmt::format("; CPU busy in run {}: a task waited for a CPU {:.0f}% of the time: rerun on a quiet machine",
                                     busiest->run, *busiest->cpu_pressure_pct);
      }
    }
    // A step in a metric without a better direction is a change, never a regression or an improvement.
    if ((direction == Better::none || direction == Better::undeclared) &&
        (c.verdict.call == Call::improved || c.verdict.call == Call::regressed)) {
      c.verdict.call = Call::unknown;
      c.verdict.why += direction == Better::none ? "; neither direction is better"
                                                 : fmt::format("; undeclared (step {} declares no metric {}, so no direction)", s.step, s.metric);
    }
    out.push_back(std::move(c));
  }
  auto rank = [](Call t) { return t == Call::regressed ? 0 : t == Call::unknown ? 1 : t == Call::improved ? 2 : 3; };
  std::stable_sort(out.begin(), out.end(), [&](const SeriesCheck& a, const SeriesCheck& b) {
    if (rank(a.verdict.call) != rank(b.verdict.call)) return rank(a.verdict.call) < rank(b.verdict.call);
    return std::abs(a.verdict.effect) > std::abs(b.verdict.effect);
  });
  return out;
}

namespace {

// Events that say a run lost measurements (the others describe how it ran).
bool loses_measurements(const RunNote& n) {
  const std::string_view event = std::string_view(n.status).substr(std::min(n.status.size(), kEventNote.size()));
  return n.status.starts_with(kEventNote) && (event == "rank.lost" || event == "run.interrupted");
}

}  // namespace

std::vector<Unmeasured> unmeasured(const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                                   const std::string& machine) {
  // Runs come in run order, a night's reruns right after it: per machine class its nights in order,
  // and the runs of the newest.
  struct Nights {
    std::vector<std::string> order, newest_runs;
  };
  std::map<std::string, Nights> of;
  for (const auto& r : runs) {
    if (!machine.empty() && r.machine != machine) continue;
    Nights& n = of[r.machine];
    if (n.order.empty() || n.order.back() != r.night) {
      n.order.push_back(r.night);
      n.newest_runs.clear();
    }
    n.newest_runs.push_back(r.run);
  }
  std::map<std::string, Unmeasured> out;
  for (const auto& [m, n] : of) out[m] = {m, n.newest_runs, 0, {}};
  for (const auto& s : series) {
    const auto n = of.find(s.machine);
    if (n == of.end() || s.points.empty()) continue;
    const std::string& last = s.points.back().night;
    if (last == n->second.order.back()) ++out[s.machine].points;
    else if (n->second.order.size() > 1 && last == n->second.order[n->second.order.size() - 2]) out[s.machine].missing.push_back(&s);
  }
  std::vector<Unmeasured> gaps;
  for (auto& [m, u] : out) {
    if (u.points == 0 || !u.missing.empty()) gaps.push_back(std::move(u));
  }
  return gaps;
}

std::string Unmeasured::why(const HistorySeries& s, const std::vector<RunNote>& notes) const {
  for (const auto& n : notes) {  // the series' own step, params and world
    if (n.step == s.step && n.params == s.params && n.world == s.world) return fmt::format("{}: {}", n.status, n.reason);
  }
  // A step skipped before it measured anything records fewer params (no size): those it has must agree.
  const json params = json::parse(s.params);
  for (const auto& n : notes) {
    if (n.step != s.step) continue;
    const json noted = json::parse(n.params);
    if (std::all_of(noted.items().begin(), noted.items().end(),
                    [&](const auto& kv) { return params.contains(kv.key()) && params[kv.key()] == kv.value(); })) {
      return fmt::format("{} of {} {}: {}", n.status, n.step, series_label(noted, n.world), n.reason);
    }
  }
  std::string events;
  for (const auto& n : notes) {
    if (loses_measurements(n)) events += fmt::format("{}{}: {}", events.empty() ? "" : "; ", n.status.substr(kEventNote.size()), n.reason);
  }
  if (!events.empty()) return events;
  return fmt::format("no record of it in run {}: the run ended before this step, or its plan no longer has it",
                     fmt::join(night, ", "));
}

}  // namespace rocebench::reports
