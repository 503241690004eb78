#pragma once
// Comparing two sets of measurements without calling noise a regression: a change is flagged only
// when it is larger than a minimum effect, larger than the spread of either run's measurements
// (within one run, samples agree more than runs do: a loaded machine moves whole runs), AND
// statistically significant (Mann-Whitney U on the recorded samples, or, when only summaries were
// recorded, 95% confidence intervals of the medians that do not overlap). A change that is not is
// UNKNOWN: rerun. Everything is ordered by key, so the same data gives the same verdicts.
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "rocebench/reports/dataset.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

// What identifies one measured quantity across runs.
struct MetricKey {
  std::string step;
  json params;
  int world = 1;
  std::string metric;
  std::string id() const;     // canonical, for ordering and lookups
  std::string label() const;  // for people
};

// All the evidence about one quantity's distribution.
struct Evidence {
  std::vector<double> values;   // the metric as recorded, one value per record
  std::vector<double> samples;  // raw samples of the metric, when records kept them
  std::optional<std::pair<double, double>> ci;  // 95% interval of the median, from a record's summary
  std::size_t n = 0;            // samples behind the values (a record without a summary counts 1)
  // "4 ranks on 2 CPUs of host0": more of the step's ranks shared a machine than it has CPUs, so its
  // times follow the scheduler more than what was measured; empty when each rank had a CPU.
  std::string cpus_shared;
  // The most any of its records says some task of the machine waited for a CPU during the step, in
  // percent of the time (the record's cpu_pressure_pct); -1 when no record says.
  double cpu_pressure_pct = -1;
  double median() const;        // of `values`
};

using EvidenceMap = std::map<std::string, std::pair<MetricKey, Evidence>>;

// Evidence for every metric of every good result record.
EvidenceMap collect_evidence(const Dataset& data);

// The verdicts of `history check` (SAME, IMPROVED, REGRESSED, UNKNOWN), and a metric in only one run:
// missing (BASE's plan ran it and NEW's, the same plan, did not), added ("new"), or gone (only BASE,
// whose plan is not NEW's, ran it: not judged).
enum class Change { same, improved, regressed, unknown, missing, added, gone };
const char* to_string(Change c);

// A plan as a run record names it.
struct PlanOfRun {
  std::string name, sha256;
};
// The plan the first run record of `data` names; none for records without one (imports, baselines).
std::optional<PlanOfRun> plan_of(const Dataset& data);

struct Comparison {
  MetricKey key;
  std::optional<double> base, now;
  double effect = 0;        // (now - base) / base
  std::optional<double> noise;  // relative spread of the noisier run's measurements
  // "p=0.0012", "CIs disjoint", "CIs overlap", "no spread recorded", "noise ±12% > effect: rerun"
  std::string significance;
  Change change = Change::same;
};

// How much one metric varies from run to run on a machine class, from the history.
struct RunNoise {
  double relative = 0;   // sigma / median
  std::size_t runs = 0;  // the runs it was estimated from
};

struct CompareOptions {
  double min_effect = 0.05;
  double alpha = 0.05;
  // By MetricKey::id: what two runs cannot show about themselves. A change must stand out of it.
  std::map<std::string, RunNoise> run_noise;
  // False when the runs ran different plans: a metric only BASE has is gone, not missing.
  bool same_plan = true;
};

// The largest relative difference two single runs of one build show by chance (p = 0.005,
// two-sided): sqrt(2) sigma times Student's t for the runs sigma was estimated from, since a
// spread seen in a handful of runs may be much smaller than the machine's (2.81 sigma with many
// runs, 5.6 sigma with five).
double run_noise_limit(const RunNoise& noise);

// A run whose machine kept some task waiting for a CPU this share of the time or more measured the
// scheduler as much as itself: its changes are UNKNOWN, whatever the history says of quiet nights.
inline constexpr double kCpuContendedPct = 20;

// One Comparison per key in either map, in key order.
std::vector<Comparison> compare(const EvidenceMap& base, const EvidenceMap& now, const CompareOptions& options);

// Two-sided p-value of the Mann-Whitney U test (normal approximation with tie and continuity
// correction).
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// The effect as people read it: a finite percentage ("+12.3%", "+1.5e+06%", "-100.0%"), "new" when
// BASE is 0 or lacks the metric (a change from nothing has no percentage), "gone" when NEW lacks it.
std::string effect_text(const Comparison& c);

// A verdict per comparison: regressions and missing metrics fail.
std::vector<Verdict> verdicts(const std::vector<Comparison>& comparisons, const std::string& suite);

// Verdicts of a run's evidence against a baseline's (suite "baseline").
std::vector<Verdict> verdicts_of_compare(const EvidenceMap& base, const EvidenceMap& now, double min_effect);

}  // namespace rocebench::reports
