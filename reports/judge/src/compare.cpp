#include "rocebench/reports/compare.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "rocebench/common/stats.hpp"
#include "rocebench/reports/changepoint.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::pass: return "pass";
    case Outcome::fail: return "fail";
    case Outcome::missing: return "missing";
  }
  return "fail";
}

const char* to_string(Change c) {
  switch (c) {
    case Change::same: return to_string(Call::same);
    case Change::improved: return to_string(Call::improved);
    case Change::regressed: return to_string(Call::regressed);
    case Change::unknown: return to_string(Call::unknown);
    case Change::missing: return "missing";
    case Change::added: return "new";
    case Change::gone: return "gone";
  }
  return "UNKNOWN";
}

std::optional<PlanOfRun> plan_of(const Dataset& data) {
  if (data.runs.empty()) return std::nullopt;
  const json& run = data.runs.front();
  const auto plan = run.find("plan");
  if (plan == run.end() || !plan->is_object()) return std::nullopt;
  auto text = [&](const char* field) {
    const auto it = plan->find(field);
    return it != plan->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  if (text("sha256").empty()) return std::nullopt;
  return PlanOfRun{text("name"), text("sha256")};
}

std::string effect_text(const Comparison& c) {
  if (!c.now) return "gone";
  // From 0 no ratio exists; to 0 is -100%, a percentage like any other.
  if (!c.base || (*c.base == 0 && *c.now != 0)) return "new";
  const double percent = c.effect * 100;
  // Past double's range (a ratio of 1e300 to 1e-300): its bound, never "inf%".
  if (!std::isfinite(percent)) return percent > 0 ? ">+1e+308%" : "<-1e+308%";
  // A thousandfold change: 3 significant digits, not a 300-digit number.
  return std::abs(percent) < 1e5 ? fmt::format("{:+.1f}%", percent) : fmt::format("{:+.3g}%", percent);
}

std::string MetricKey::id() const { return step + "\n" + params.dump() + "\n" + std::to_string(world) + "\n" + metric; }

std::string MetricKey::label() const { return fmt::format("{} {} {}", step, metric, series_label(params, world)); }

double Evidence::median() const {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return median_of_sorted(sorted);
}

namespace {

// Metrics declared as a constant divided by the sampled one (bandwidth = bytes / time), whose
// intervals and samples therefore follow from the sampled metric's.
bool inverse_of(const StepShape* shape, const std::string& metric, const std::string& sampled) {
  const MetricShape* m = shape ? shape->metric(metric) : nullptr;
  return m && m->inverse_of_sampled && !sampled.empty() && sampled == shape->sampled;
}

struct Machine {
  std::string name;
  std::int64_t cpus = 0;
  std::vector<std::int64_t> ranks;
};

// The machines of each run (by run id), from its run record: one per host, except emulated hosts,
// which are network namespaces of one machine.
std::map<std::string, std::vector<Machine>> machines_of_runs(const Dataset& data) {
  // A field of a record as text, "" when it is missing or not text.
  auto text = [](const json& record, const char* field) {
    const auto it = record.find(field);
    return it != record.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  std::set<std::string> emulated;
  for (const json& e : data.events) {
    if (e.is_object() && text(e, "event") == "hosts.emulated") emulated.insert(text(e, "run"));
  }
  std::map<std::string, std::vector<Machine>> out;
  for (const json& r : data.runs) {
    if (!r.contains("run") || !r["run"].is_string() || !r.contains("hosts") || !r["hosts"].is_array()) continue;
    const std::string& run = r["run"].get_ref<const std::string&>();
    auto& machines = out[run];
    const bool one_machine = emulated.count(run) > 0;
    for (const json& h : r["hosts"]) {
      const json* cpu = h.is_object() && h.contains("cpu") ? &h["cpu"] : nullptr;
      if (!cpu || !cpu->is_object() || !cpu->contains("cores") || !(*cpu)["cores"].is_number_integer()) continue;
      if (machines.empty() || !one_machine) machines.push_back({text(h, "hostname"), (*cpu)["cores"].get<std::int64_t>(), {}});
      if (one_machine) machines.front().name = "one machine (emulated hosts)";
      if (!h.contains("ranks") || !h["ranks"].is_array()) continue;
      for (const json& rank : h["ranks"]) {
        if (rank.is_number_integer()) machines.back().ranks.push_back(rank.get<std::int64_t>());
      }
    }
  }
  return out;
}

// "4 ranks on 2 CPUs of host0" when a step of `world` ranks (ranks 0 .. world-1) put more ranks on a
// machine than it has CPUs; empty otherwise.
std::string cpus_shared(const std::vector<Machine>& machines, int world) {
  for (const Machine& m : machines) {
    const auto ranks = std::count_if(m.ranks.begin(), m.ranks.end(), [&](std::int64_t r) { return r >= 0 && r < world; });
    if (m.cpus > 0 && ranks > m.cpus) return fmt::format("{} ranks on {} CPU{} of {}", ranks, m.cpus, m.cpus == 1 ? "" : "s", m.name);
  }
  return "";
}

}  // namespace

EvidenceMap collect_evidence(const Dataset& data) {
  EvidenceMap out;
  const auto machines = machines_of_runs(data);
  for (const auto& o : data.results) {
    if (o.status != Status::ok && o.status != Status::warn) continue;
    const std::string sampled = o.samples.of == kNoName ? "" : data.names.str(o.samples.of);
    const StepShape* shape = declared_shapes().of(data.names.str(o.step));
    for (const auto& [id, value] : o.metrics) {
      MetricKey key{data.names.str(o.step), data.params_of(o), o.world, data.names.str(id)};
      auto& [k, e] = out[key.id()];
      if (e.cpus_shared.empty()) {
        const auto run = machines.find(data.names.str(o.run));
        if (run != machines.end()) e.cpus_shared = cpus_shared(run->second, o.world);
      }
      if (e.values.empty()) k = std::move(key);
      e.cpu_pressure_pct = std::max(e.cpu_pressure_pct, static_cast<double>(o.cpu_pressure_pct));
      e.values.push_back(value);
      const bool same = k.metric == sampled;
      if (!same && !inverse_of(shape, k.metric, sampled)) {
        ++e.n;
        continue;
      }
      e.n += std::max<std::size_t>(o.samples.n, 1);
      // For an inverse metric, a sample x of the sampled one is value * median / x.
      const double m = o.samples.median, v = value;  // a lambda cannot capture a structured binding (clang 14)
      auto map = [&](double x) { return same ? x : (x > 0 && m > 0 ? v * m / x : 0.0); };
      for (double x : o.samples.values) e.samples.push_back(map(x));
      if (o.samples.has_ci) {
        const double a = map(o.samples.ci_low), b = map(o.samples.ci_high);
        e.ci = std::make_pair(std::min(a, b), std::max(a, b));
      }
    }
  }
  // One record's interval says nothing about several records together: their values are the samples.
  for (auto& [id, entry] : out) {
    if (entry.second.values.size() > 1) entry.second.ci.reset();
  }
  return out;
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const double n1 = static_cast<double>(a.size()), n2 = static_cast<double>(b.size());
  if (a.empty() || b.empty()) return 1.0;
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  double rank_sum_a = 0, tie_term = 0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    for (std::size_t k = i; k < j; ++k) {
      if (all[k].second == 0) rank_sum_a += mid_rank;
    }
    tie_term += t * t * t - t;
    i = j;
  }
  const double u = rank_sum_a - n1 * (n1 + 1) / 2.0;
  const double n = n1 + n2;
  const double var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)));
  if (var <= 0) return 1.0;
  const double z = (std::abs(u - n1 * n2 / 2.0) - 0.5) / std::sqrt(var);
  return std::erfc(std::max(z, 0.0) / std::sqrt(2.0));
}

namespace {

constexpr std::size_t kMinSamples = 5;  // below this a rank test cannot reach significance

// How far one measurement of this run strays, relative to its median: the interquartile range of the
// samples (or of the records' values) over 1.349, which is sigma for normal data and not blown up by
// one outlier; from a record's summary, the median's 95% interval widened back by sqrt(n).
std::optional<double> relative_noise(const Evidence& e) {
  const double m = std::abs(e.median());
  if (m == 0) return std::nullopt;
  const auto& xs = e.samples.size() >= kMinSamples ? e.samples : e.values;
  if (xs.size() >= kMinSamples) {
    std::vector<double> sorted = xs;
    std::sort(sorted.begin(), sorted.end());
    auto quantile = [&](double q) {
      const double at = q * static_cast<double>(sorted.size() - 1);
      const auto i = static_cast<std::size_t>(at);
      return i + 1 < sorted.size() ? sorted[i] + (at - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]) : sorted[i];
    };
    return (quantile(0.75) - quantile(0.25)) / 1.349 / m;
  }
  // The median's standard error is 1.2533 sigma / sqrt(n) for normal data.
  if (e.ci && e.n > 1) return (e.ci->second - e.ci->first) / (2 * 1.96) * std::sqrt(static_cast<double>(e.n)) / 1.2533 / m;
  return std::nullopt;
}

// Whether base and now differ beyond noise, and how that was decided.
std::pair<std::optional<bool>, std::string> significance(const Evidence& base, const Evidence& now, double alpha) {
  auto rank_test = [&](const std::vector<double>& a, const std::vector<double>& b) {
    const double p = mann_whitney_p(a, b);
    return std::make_pair(std::optional<bool>(p < alpha), fmt::format("p={:.3g}", p));
  };
  if (base.samples.size() >= kMinSamples && now.samples.size() >= kMinSamples) return rank_test(base.samples, now.samples);
  if (base.values.size() >= kMinSamples && now.values.size() >= kMinSamples) return rank_test(base.values, now.values);
  if (base.ci && now.ci) {
    const bool disjoint = base.ci->second < now.ci->first || now.ci->second < base.ci->first;
    return {disjoint, disjoint ? "CIs disjoint" : "CIs overlap"};
  }
  return {std::nullopt, "no spread recorded"};
}

}  // namespace

namespace {

// Student's t, upper 0.25% point (t.ppf(0.9975, df)): two-sided level 0.5%, at least 1 degree of
// freedom. Kept per df: a compare asks it of every series, of a few degrees of freedom.
double t_upper_quarter_percent(double df) {
  thread_local std::map<double, double> known;
  df = std::max(df, 1.0);
  const auto [it, inserted] = known.try_emplace(df, 0.0);
  if (inserted) it->second = student_t_critical(0.005, df);
  return it->second;
}

}  // namespace

double run_noise_limit(const RunNoise& noise) {
  return std::sqrt(2.0) * t_upper_quarter_percent(static_cast<double>(noise.runs) - 1) * noise.relative;
}

namespace {

// The pair's own run-to-run noise, per sweep: how far the series of one sweep moved between the
// two runs, log(now / base), around their common move, as 1.4826 MAD. A code change moves a sweep
// one way, or moves some of its points and not others; runs on a noisy machine move many points
// both ways at once. None for sweeps of fewer than kMinSweepPoints series.
constexpr std::size_t kMinSweepPoints = 6;
struct PairNoise {
  double sigma = 0;  // of log(now / base)
  std::size_t series = 0;
};

// The sweep a series is a point of: its step, metric, and the params its step declares as a
// series' identity (shape.json), along the declared x (a collective's sizes). "" when undeclared.
std::string sweep_of(const MetricKey& k) {
  const StepShape* shape = declared_shapes().of(k.step);
  if (!shape) return "";
  json identity = json::object();
  for (const auto& p : shape->series) {
    if (k.params.contains(p)) identity[p] = k.params[p];
  }
  return fmt::format("{}\n{}\n{}\n{}", k.step, k.metric, shape->x == "world" ? 0 : k.world, identity.dump());
}

std::map<std::string, PairNoise> pair_noise(const std::vector<Comparison>& comparisons) {
  std::map<std::string, std::vector<double>> moves;
  for (const auto& c : comparisons) {
    if (c.base && c.now && *c.base > 0 && *c.now > 0) moves[sweep_of(c.key)].push_back(std::log(*c.now / *c.base));
  }
  std::map<std::string, PairNoise> out;
  for (auto& [sweep, x] : moves) {
    if (sweep.empty() || x.size() < kMinSweepPoints) continue;
    out[sweep] = {mad_sigma(x), x.size()};
  }
  return out;
}

// A change that stood out of the noise, called by its metric's declared direction (an
// undeclared or directionless metric stays UNKNOWN, its significance saying why).
Change call(Comparison& c, Better direction) {
  if (direction == Better::undeclared) {
    c.significance += fmt::format(": undeclared (step {} declares no metric {}, so no direction)", c.key.step, c.key.metric);
    return Change::unknown;
  }
  if (direction == Better::none) {
    c.significance += ": changed, and neither direction is better";
    return Change::unknown;
  }
  return (c.effect > 0) == (direction == Better::higher) ? Change::improved : Change::regressed;
}

// What would decide a change of `now` that no spread was recorded for. Another run of an import
// cannot: the tool printed one figure per point, its iterations' spread is not in its output.
std::string what_decides(const MetricKey& key, const Evidence& now) {
  const auto tool = key.params.find("tool");
  if (tool == key.params.end() || !tool->is_string()) return ": rerun keeping samples, or judge with a history (compare --db)";
  const std::string name = tool->get<std::string>();
  return fmt::format(": {} printed one figure per point{}, without its spread: import {} or more runs of {} into each "
                     "results file (-o FILE --run ID), or judge with a history (compare --db DB --machine CLASS)",
                     name, now.n > 1 ? fmt::format(" (the summary of {} iterations)", now.n) : "", kMinSamples, name);
}

// A change must also stand out of how far the other points of its sweep moved between these runs
// (p = 0.005, Student's t for the points it was estimated from).
void apply_pair_noise(std::vector<Comparison>& out) {
  const auto noise = pair_noise(out);
  for (auto& c : out) {
    if ((c.change != Change::improved && c.change != Change::regressed) || !(*c.base > 0 && *c.now > 0)) continue;
    const auto pair = noise.find(sweep_of(c.key));
    if (pair == noise.end()) continue;
    const auto [sigma, series] = pair->second;
    if (std::abs(std::log(*c.now / *c.base)) < t_upper_quarter_percent(static_cast<double>(series) - 1) * sigma) {
      c.change = Change::unknown;
      c.noise = std::max(c.noise.value_or(0), sigma);
      c.significance = fmt::format("its sweep's {} points moved ±{:.0f}%: rerun", series, sigma * 100);
    }
  }
}

}  // namespace

std::vector<Comparison> compare(const EvidenceMap& base, const EvidenceMap& now, const CompareOptions& options) {
  std::vector<Comparison> out;
  auto b = base.begin();
  auto n = now.begin();
  while (b != base.end() || n != now.end()) {
    Comparison c;
    if (n == now.end() || (b != base.end() && b->first < n->first)) {
      c.key = b->second.first;
      c.base = b->second.second.median();
      c.change = options.same_plan ? Change::missing : Change::gone;
      ++b;
    } else if (b == base.end() || n->first < b->first) {
      c.key = n->second.first;
      c.now = n->second.second.median();
      c.change = Change::added;
      ++n;
    } else {
      const Evidence& eb = b->second.second;
      const Evidence& en = n->second.second;
      c.key = n->second.first;
      c.base = eb.median();
      c.now = en.median();
      c.effect = *c.base != 0 ? (*c.now - *c.base) / std::abs(*c.base) : (*c.now == 0 ? 0.0 : INFINITY);
      const auto [significant, how] = significance(eb, en, options.alpha);
      c.significance = how;
      const auto nb = relative_noise(eb), nn = relative_noise(en);
      if (nb || nn) c.noise = std::max(nb.value_or(0), nn.value_or(0));
      const Better direction = declared_shapes().better(c.key.step, c.key.metric);
      const auto history = options.run_noise.find(c.key.id());
      // Without a history, these two runs say all there is. The history's spread comes from a few
      // runs: neither oversubscribed ranks nor a busy machine are inside it, whatever it says.
      const bool no_history = history == options.run_noise.end();
      if (std::abs(c.effect) < options.min_effect) {
        c.change = Change::same;
      } else if (!(en.cpus_shared.empty() && eb.cpus_shared.empty())) {
        // Oversubscribed ranks run when the scheduler lets them, so two runs of one build can differ many times over.
        c.change = Change::unknown;
        c.significance = fmt::format("{}: rerun with a CPU per rank", en.cpus_shared.empty() ? eb.cpus_shared : en.cpus_shared);
      } else if (std::max(eb.cpu_pressure_pct, en.cpu_pressure_pct) >= kCpuContendedPct) {
        c.change = Change::unknown;
        const bool in_new = en.cpu_pressure_pct >= eb.cpu_pressure_pct;
        c.significance = fmt::format("CPU busy in {}: a task waited for a CPU {:.0f}% of the time: rerun on a quiet machine",
                                     in_new ? "NEW" : "BASE", in_new ? en.cpu_pressure_pct : eb.cpu_pressure_pct);
      } else if (!no_history && std::abs(c.effect) < run_noise_limit(history->second)) {
        const RunNoise& runs = history->second;
        c.change = Change::unknown;
        c.noise = std::max(c.noise.value_or(0), runs.relative);
        c.significance = fmt::format("{} runs here vary ±{:.1f}%: rerun", runs.runs, runs.relative * 100);
      } else if (c.noise && *c.noise >= std::abs(c.effect)) {
        c.change = Change::unknown;
        c.significance = fmt::format("noise ±{:.0f}% > effect: rerun", *c.noise * 100);
      } else if (!significant && !no_history) {
        // No spread of its own (an import): the history's, which the change stands out of, decides.
        c.significance = fmt::format("beyond the ±{:.1f}% {} runs here vary", history->second.relative * 100, history->second.runs);
        c.change = call(c, direction);
      } else if (!significant || !*significant) {
        c.change = Change::unknown;
        c.significance += significant ? ": rerun" : what_decides(c.key, en);
      } else {
        c.change = call(c, direction);
      }
      ++b;
      ++n;
    }
    out.push_back(std::move(c));
  }
  apply_pair_noise(out);
  return out;
}

std::vector<Verdict> verdicts(const std::vector<Comparison>& comparisons, const std::string& suite) {
  std::vector<Verdict> out;
  for (const auto& c : comparisons) {
    Verdict v;
    v.suite = suite;
    v.name = c.key.label();
    v.outcome = c.change == Change::regressed ? Outcome::fail : c.change == Change::missing ? Outcome::missing : Outcome::pass;
    if (c.change == Change::missing) {
      v.message = fmt::format("expected {:.6g} (baseline), no record in this run", *c.base);
    } else if (c.change == Change::added) {
      v.message = fmt::format("{:.6g}, not in the baseline", *c.now);
    } else if (c.change == Change::gone) {
      v.message = fmt::format("{:.6g} in the baseline, whose plan differs: this run's plan does not measure it", *c.base);
    } else {
      v.message = fmt::format("{}: {:.6g} -> {:.6g} ({}, {})", to_string(c.change), *c.base, *c.now, effect_text(c),
                              c.significance);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace rocebench::reports
