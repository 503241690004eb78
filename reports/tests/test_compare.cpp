#include <gtest/gtest.h>

#include <cctype>
#include <functional>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fixtures.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

// A run of `n` repetitions of one allreduce whose time is noisy around `mean_us` (3% spread),
// each record keeping its raw samples.
Dataset noisy_run(const std::string& run, double mean_us, unsigned seed, bool raw_samples) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(mean_us, mean_us * 0.03);
  std::vector<json> records;
  for (int rep = 0; rep < (raw_samples ? 1 : 12); ++rep) {
    std::vector<double> times;
    for (int i = 0; i < 30; ++i) times.push_back(noise(rng));
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const double median = (sorted[14] + sorted[15]) / 2;
    json r = collective(run, "allreduce", 8, 67108864, median, 67108864 / median / 1e3 * 1.75);
    if (raw_samples) r["samples"] = {{"n", 30}, {"median", median}, {"values", times}};
    records.push_back(r);
  }
  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  return d;
}

std::vector<Comparison> compare_runs(double base_us, double new_us, unsigned seed, bool raw) {
  return compare(collect_evidence(noisy_run("base", base_us, seed, raw)), collect_evidence(noisy_run("new", new_us, seed + 1000, raw)), {});
}

const Comparison& find(const std::vector<Comparison>& cs, const std::string& metric) {
  for (const auto& c : cs) {
    if (c.key.metric == metric) return c;
  }
  throw std::runtime_error("no " + metric);
}

std::size_t find_index(const std::vector<Comparison>& cs, const std::string& metric) {
  return static_cast<std::size_t>(&find(cs, metric) - cs.data());
}

bool flagged(const std::vector<Comparison>& cs) {
  return std::any_of(cs.begin(), cs.end(), [](const Comparison& c) {
    return c.change == Change::regressed || c.change == Change::improved || c.change == Change::missing;
  });
}

}  // namespace

TEST(Compare, SameDistributionRaisesNothing) {
  for (bool raw : {true, false}) {
    for (unsigned seed = 1; seed <= 20; ++seed) {
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " raw " << raw);
      EXPECT_FALSE(flagged(compare_runs(100, 100, seed, raw)));
    }
  }
}

TEST(Compare, TenPercentSlowerIsARegressionInTimeAndBandwidth) {
  for (bool raw : {true, false}) {
    SCOPED_TRACE(raw);
    const auto cs = compare_runs(100, 110, 7, raw);
    const auto& time = find(cs, "time_us");
    EXPECT_EQ(time.change, Change::regressed) << time.significance;
    EXPECT_NEAR(time.effect, 0.10, 0.03);
    EXPECT_EQ(find(cs, "busbw_GBps").change, Change::regressed);  // bandwidth falls as time grows
    const auto better = compare_runs(110, 100, 7, raw);
    EXPECT_EQ(find(better, "time_us").change, Change::improved);
  }
}

TEST(Compare, SameDataGivesTheSameVerdicts) {
  const auto a = verdicts(compare_runs(100, 108, 3, true), "compare");
  const auto b = verdicts(compare_runs(100, 108, 3, true), "compare");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].message, b[i].message);
    EXPECT_EQ(a[i].outcome, b[i].outcome);
  }
}

TEST(Compare, SummaryIntervalsDecideWhenNoSamplesWereKept) {
  Dataset base, slow, close;
  base.load(write_records(temp_dir() / "a.jsonl", {collective("a", "allreduce", 8, 1024, 100, 8)}));
  slow.load(write_records(temp_dir() / "b.jsonl", {collective("b", "allreduce", 8, 1024, 110, 8)}));
  close.load(write_records(temp_dir() / "c.jsonl", {collective("c", "allreduce", 8, 1024, 101.5, 8)}));
  // Fixture intervals span median * [0.98, 1.02]: 100 -> [98, 102], 110 -> [107.8, 112.2].
  const auto cs = compare(collect_evidence(base), collect_evidence(slow), {});
  EXPECT_EQ(find(cs, "time_us").change, Change::regressed);
  EXPECT_EQ(find(cs, "time_us").significance, "CIs disjoint");
  const auto near = compare(collect_evidence(base), collect_evidence(close), {.min_effect = 0.01, .alpha = 0.05, .run_noise = {}});
  EXPECT_EQ(find(near, "time_us").change, Change::unknown);
}

TEST(Compare, MissingMetricFailsAndNewMetricIsListed) {
  Dataset a, b;
  a.load(write_records(temp_dir() / "a.jsonl", {collective("a", "allreduce", 8, 1024, 100, 8)}));
  b.load(write_records(temp_dir() / "b.jsonl", {collective("b", "allreduce", 8, 2048, 100, 8)}));
  const auto vs = verdicts(compare(collect_evidence(a), collect_evidence(b), {}), "compare");
  const auto missing = std::count_if(vs.begin(), vs.end(), [](const Verdict& v) { return v.outcome == Outcome::missing; });
  EXPECT_EQ(missing, 4);  // time, algbw, busbw, wrong at 1024 bytes
}

// Ranks that outnumber their machine's CPUs run when the scheduler lets them: an A/A pair of the default
// plan (4 ranks on 4 emulated hosts of a 2-CPU machine) differed 17x with disjoint intervals. That is
// UNKNOWN, named, unless each rank had a CPU.
TEST(Compare, RanksSharingCpusAreUnknownNotARegression) {
  auto run = [](const std::string& id, double time_us, std::int64_t cpus, bool emulated) {
    json hosts = run_record(id, "2026-12-02T14:00:00Z", {{"host0", 0}, {"host1", 0}});  // ranks 0,1 and 2,3
    for (auto& h : hosts["hosts"]) h["cpu"]["cores"] = cpus;
    std::vector<json> records{hosts, collective(id, "allreduce", 4, 1024, time_us, 8), collective(id, "allreduce", 2, 1024, time_us, 8)};
    if (emulated) records.push_back(event_record(id, "hosts.emulated", "rank i ran in emulated host i", json::object()));
    Dataset d;
    d.load(write_records(temp_dir() / (id + ".jsonl"), records));
    return collect_evidence(d);
  };
  auto time_at = [](const std::vector<Comparison>& cs, int world) {
    for (const auto& c : cs) {
      if (c.key.metric == "time_us" && c.key.world == world) return c;
    }
    throw std::runtime_error("no time_us");
  };
  const auto emulated = compare(run("a", 100, 2, true), run("b", 1700, 2, true), {});
  EXPECT_EQ(time_at(emulated, 4).change, Change::unknown);
  EXPECT_EQ(time_at(emulated, 4).significance, "4 ranks on 2 CPUs of one machine (emulated hosts): rerun with a CPU per rank");
  // A history of six such runs spread ±1% (MAD): the seventh still went 17x, as the scheduler chose.
  CompareOptions with_history;
  with_history.run_noise[time_at(emulated, 4).key.id()] = {0.01, 6};
  EXPECT_EQ(time_at(compare(run("a", 100, 2, true), run("b", 1700, 2, true), with_history), 4).change, Change::unknown);
  EXPECT_EQ(time_at(emulated, 2).change, Change::regressed) << "2 ranks had 2 CPUs";
  const auto own_machines = compare(run("a", 100, 2, false), run("b", 1700, 2, false), {});
  EXPECT_EQ(time_at(own_machines, 4).change, Change::regressed) << "2 ranks on each 2-CPU host";
  const auto one_cpu = compare(run("a", 100, 1, false), run("b", 1700, 1, false), {});
  EXPECT_EQ(time_at(one_cpu, 2).significance, "2 ranks on 1 CPU of host0: rerun with a CPU per rank");
}

// A run measured while other work kept the machine's CPUs busy says as much about the machine as
// about the code: an A/A pair of the default plan beside a build gave training 24% faster, disjoint.
TEST(Compare, ARunOnABusyMachineIsUnknownNotARegression) {
  auto run = [](const std::string& id, double time_us, double pressure_pct) {
    json r = collective(id, "allreduce", 4, 1024, time_us, 8);
    r["cpu_pressure_pct"] = pressure_pct;
    Dataset d;
    d.load(write_records(temp_dir() / (id + ".jsonl"), {r}));
    return collect_evidence(d);
  };
  const auto busy = compare(run("a", 100, 3), run("b", 124, 85), {});
  EXPECT_EQ(find(busy, "time_us").change, Change::unknown);
  EXPECT_EQ(find(busy, "time_us").significance, "CPU busy in NEW: a task waited for a CPU 85% of the time: rerun on a quiet machine");
  EXPECT_EQ(find(compare(run("a", 100, 85), run("b", 124, 3), {}), "time_us").significance,
            "CPU busy in BASE: a task waited for a CPU 85% of the time: rerun on a quiet machine");
  const auto quiet = compare(run("a", 100, 3), run("b", 124, 5), {});
  EXPECT_EQ(find(quiet, "time_us").change, Change::regressed) << find(quiet, "time_us").significance;
  // The history's spread is that of quiet nights; as history check does, a busy night still asks for a rerun.
  const auto history = compare(run("a", 100, 3), run("b", 124, 85), {.min_effect = 0.05, .alpha = 0.05,
                                                                      .run_noise = {{find(busy, "time_us").key.id(), {0.01, 30}}}});
  EXPECT_EQ(find(history, "time_us").change, Change::unknown) << find(history, "time_us").significance;
}

// A tool's output that did not say how many ranks ran is labelled so, never world=1 (#19).
TEST(Compare, ASeriesOfUnknownRanksIsLabelledSo) {
  const MetricKey unknown{"collectives.allreduce", {{"bytes", 1024}, {"ranks", "unknown"}}, 1, "busbw_GBps"};
  EXPECT_EQ(unknown.label(), "collectives.allreduce busbw_GBps [bytes=1024 ranks=unknown] world=unknown");
  const MetricKey known{"collectives.allreduce", {{"bytes", 1024}}, 8, "busbw_GBps"};
  EXPECT_EQ(known.label(), "collectives.allreduce busbw_GBps [bytes=1024] world=8");
}

TEST(MannWhitney, KnownValues) {
  const std::vector<double> low{1, 2, 3, 4, 5}, high{6, 7, 8, 9, 10};
  // U = 0; normal approximation with continuity correction: z = (12.5 - 0.5) / sqrt(22.917) = 2.5067
  EXPECT_NEAR(mann_whitney_p(low, high), 0.01219, 1e-4);
  EXPECT_DOUBLE_EQ(mann_whitney_p(low, high), mann_whitney_p(high, low));
  EXPECT_NEAR(mann_whitney_p(low, low), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_p({}, high), 1.0);
}

TEST(MannWhitney, TiesShrinkTheVarianceByHand) {
  // Quantised latencies tie. Pooled and sorted: 1 1 | 2 2 2 | 3 3 3 | 4 4, mid-ranks 1.5, 4, 7, 9.5.
  // a's rank sum 1.5+1.5+4+4+7 = 18, U = 18 - 15 = 3; tie term 2*(2^3-2) + 2*(3^3-3) = 60;
  // var = 25/12 * (11 - 60/90) = 21.528; z = (|3 - 12.5| - 0.5) / sqrt(var) = 1.9397 -> p = 0.05241
  // (scipy.stats.mannwhitneyu, asymptotic with continuity, agrees). Without the tie term: 0.0601.
  const std::vector<double> a{1, 1, 2, 2, 3}, b{2, 3, 3, 4, 4};
  EXPECT_NEAR(mann_whitney_p(a, b), 0.052412, 1e-5);
  // Every value tied: no evidence at all.
  EXPECT_DOUBLE_EQ(mann_whitney_p({5, 5, 5}, {5, 5, 5, 5}), 1.0);
}

TEST(Compare, ChangeInsideTheRunsNoiseIsUnknownNotARegression) {
  auto run = [](const std::string& id, double median, double cv, unsigned seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(median, median * cv);
    std::vector<double> times;
    for (int i = 0; i < 40; ++i) times.push_back(noise(rng));
    json r = collective(id, "allreduce", 8, 1 << 20, median, 1e6 / median);
    r["samples"] = {{"n", 40}, {"median", median}, {"values", times}};
    Dataset d;
    d.load(write_records(temp_dir() / "results.jsonl", {r}));
    return collect_evidence(d);
  };
  // 10% slower, samples spread 30%: the rank test alone would call it (40 samples each).
  const auto noisy = find(compare(run("a", 100, 0.3, 1), run("b", 110, 0.3, 2), {}), "time_us");
  EXPECT_EQ(noisy.change, Change::unknown) << noisy.significance;
  EXPECT_NE(noisy.significance.find("rerun"), std::string::npos);
  const auto quiet = find(compare(run("a", 100, 0.01, 1), run("b", 110, 0.01, 2), {}), "time_us");
  EXPECT_EQ(quiet.change, Change::regressed) << quiet.significance;
  // The same quiet runs on a machine whose runs vary by 2% from night to night (the history says so):
  // 10% stands out of 30 such runs (limit 8.6%), not out of 5 (limit 15.8%).
  CompareOptions o;
  o.run_noise[quiet.key.id()] = {0.02, 5};
  const auto judged = find(compare(run("a", 100, 0.01, 1), run("b", 110, 0.01, 2), o), "time_us");
  EXPECT_EQ(judged.change, Change::unknown) << judged.significance;
  EXPECT_EQ(judged.significance, "5 runs here vary ±2.0%: rerun");
  o.run_noise[quiet.key.id()] = {0.02, 30};
  EXPECT_EQ(find(compare(run("a", 100, 0.01, 1), run("b", 110, 0.01, 2), o), "time_us").change, Change::regressed);
}

// A spread seen in few runs may be far below the machine's: Student's t for the runs it came from,
// against t.ppf(0.9975, df) * sqrt(2). The quantiles are exact (common/stats, no longer a table
// rounded to 3 decimals and interpolated between its rows): here the t density integrated to 1e-9,
// and tan(0.4975 pi) at df 1.
TEST(Compare, RunNoiseLimitWidensForFewRuns) {
  EXPECT_NEAR(run_noise_limit({0.01, 5}), 5.597568367 * std::sqrt(2.0) * 0.01, 1e-8);     // df 4
  EXPECT_NEAR(run_noise_limit({0.01, 26}), 3.078199461 * std::sqrt(2.0) * 0.01, 1e-8);    // df 25
  EXPECT_NEAR(run_noise_limit({0.01, 1001}), 2.813277860 * std::sqrt(2.0) * 0.01, 1e-8);  // df 1000
  EXPECT_NEAR(run_noise_limit({0.01, 1}), 127.321336469 * std::sqrt(2.0) * 0.01, 1e-8);   // one run: no spread known
  // What the table gave, within its rounding (3 decimals) and its interpolation between rows.
  EXPECT_NEAR(run_noise_limit({0.01, 5}), 5.598 * std::sqrt(2.0) * 0.01, 1e-5);
  EXPECT_NEAR(run_noise_limit({0.01, 26}), 3.078 * std::sqrt(2.0) * 0.01, 2e-5);
  EXPECT_LT(run_noise_limit({0.01, 200}), run_noise_limit({0.01, 100}));
}

namespace {

// Two runs of a 20-size allreduce sweep, each size's summary interval ±2% (the fixture's): in the
// new one, size i took `factor(i)` times as long.
// With `algorithms` 2, sizes 0-9 are one sweep (ring) and 10-19 another (ps).
std::vector<Comparison> sweep_pair(const std::function<double(int)>& factor, int algorithms = 1) {
  std::vector<json> base, now;
  for (int i = 0; i < 20; ++i) {
    const int size = algorithms == 2 ? i % 10 : i;
    const double bytes = 1024.0 * (1 << size), us = 10 + bytes / 1e3;
    base.push_back(collective("base", "allreduce", 2, bytes, us, bytes / us / 1e3));
    now.push_back(collective("new", "allreduce", 2, bytes, us * factor(i), bytes / (us * factor(i)) / 1e3));
    if (algorithms == 2 && i >= 10) base.back()["params"]["algorithm"] = now.back()["params"]["algorithm"] = "ps";
  }
  Dataset b, n;
  b.load(write_records(temp_dir() / "base.jsonl", base));
  n.load(write_records(temp_dir() / "new.jsonl", now));
  return compare(collect_evidence(b), collect_evidence(n), {});
}

std::map<Change, int> count_time_us(const std::vector<Comparison>& cs) {
  std::map<Change, int> out;
  for (const auto& c : cs) out[c.change] += c.key.metric == "time_us";
  return out;
}

}  // namespace

// Two runs of one build on a noisy machine: sizes 30% slower and 30% faster at once, each within
// its own narrow interval. The pair's other series show that noise: UNKNOWN, not 20 verdicts.
TEST(Compare, SeriesThatMoveBothWaysBetweenTwoRunsAreUnknown) {
  std::mt19937 rng(3);
  std::normal_distribution<double> swing(0, 0.3);
  std::vector<double> f;
  for (int i = 0; i < 20; ++i) f.push_back(std::exp(swing(rng)));
  const auto cs = sweep_pair([&](int i) { return f[i]; });
  auto n = count_time_us(cs);
  EXPECT_EQ(n[Change::regressed], 0);
  EXPECT_EQ(n[Change::improved], 0);
  EXPECT_EQ(n[Change::unknown] + n[Change::same], 20);
  const auto unknown = std::find_if(cs.begin(), cs.end(), [](const Comparison& one) { return one.change == Change::unknown; });
  ASSERT_NE(unknown, cs.end());
  EXPECT_NE(unknown->significance.find("its sweep's 20 points moved ±"), std::string::npos) << unknown->significance;
}

// A quiet pair (sizes within ±0.5% of each other's move): a step in four sizes, or in all of them,
// stands out and is called.
TEST(Compare, AStepInAQuietPairIsCalledInSomeSeriesOrInAll) {
  std::mt19937 rng(4);
  std::normal_distribution<double> noise(1, 0.005);
  std::vector<double> f;
  for (int i = 0; i < 20; ++i) f.push_back(noise(rng));
  auto some = count_time_us(sweep_pair([&](int i) { return f[i] * (i >= 16 ? 1.2 : 1.0); }));
  EXPECT_EQ(some[Change::regressed], 4);
  EXPECT_EQ(some[Change::same], 16);
  auto all = count_time_us(sweep_pair([&](int i) { return f[i] * 1.15; }));
  EXPECT_EQ(all[Change::regressed], 20);
}

// Each sweep's noise is its own: one algorithm 20% slower at every size beside another unchanged is
// 10 regressions, not a metric that moved both ways.
TEST(Compare, AStepInOneSweepIsNotHiddenByAnotherSweep) {
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(1, 0.005);
  std::vector<double> f;
  for (int i = 0; i < 20; ++i) f.push_back(noise(rng));
  auto n = count_time_us(sweep_pair([&](int i) { return f[i] * (i < 10 ? 1.2 : 1.0); }, 2));
  EXPECT_EQ(n[Change::regressed], 10);
  EXPECT_EQ(n[Change::same], 10);
}

namespace {

// Two runs of one allreduce whose time goes from `base_us` to `now_us`, each of 10 samples 0.1% apart.
std::vector<Comparison> compare_times(double base_us, double now_us) {
  auto run = [](const std::string& id, double t) {
    json r = collective(id, "allreduce", 8, 1024, t, t == 0 ? 0 : 1024 / t / 1e3);
    std::vector<double> values;
    for (int i = 0; i < 10; ++i) values.push_back(t * (1 + 0.001 * (i - 5)));
    r["samples"] = {{"n", 10}, {"median", t}, {"values", values}};
    Dataset d;
    d.load(write_records(temp_dir() / "results.jsonl", {r}));
    return collect_evidence(d);
  };
  return compare(run("a", base_us), run("b", now_us), {});
}

// A message that prints its effect as it should: no infinity, no 300-digit number.
void expect_printable(const std::vector<Comparison>& cs) {
  for (const auto& v : verdicts(cs, "compare")) {
    EXPECT_EQ(v.message.find("inf"), std::string::npos) << v.message;
    EXPECT_LT(v.message.size(), 200u) << v.message;
  }
}

}  // namespace

// Effects of any size are finite percentages, and a change from 0 has none: it is "new".
TEST(Compare, EffectsArePrintedAsFinitePercentagesOrNew) {
  const auto huge = compare_times(1e-5, 1e300);
  expect_printable(huge);
  EXPECT_NE(verdicts(huge, "compare")[find_index(huge, "time_us")].message.find("(+1e+307%, "), std::string::npos);
  const auto overflow = compare_times(1e-300, -1e10);  // past double's range
  expect_printable(overflow);
  const auto from_zero = compare_times(0, 50);
  expect_printable(from_zero);
  EXPECT_NE(verdicts(from_zero, "compare")[find_index(from_zero, "time_us")].message.find("(new, "), std::string::npos);
  const auto usual = compare_times(100, 110);
  EXPECT_NE(verdicts(usual, "compare")[find_index(usual, "time_us")].message.find("(+10.0%, "), std::string::npos);
}

namespace {

// A run of nccl-tests imported: all_reduce_perf.txt with its times scaled by `factor`.
EvidenceMap imported_run(const std::string& run, double factor) {
  std::string text = read_file(source_dir() / "all_reduce_perf.txt");
  std::string scaled;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto t = split_ws(line);
    if (!t.empty() && std::isdigit(static_cast<unsigned char>(t[0][0])) && t.size() == 13) {
      for (std::size_t i : {5u, 9u}) t[i] = fmt::format("{:.2f}", std::stod(t[i]) * factor);
      line = fmt::format("{}", fmt::join(t, "  "));
    }
    scaled += line + "\n";
  }
  const auto dir = temp_dir();
  write_file(dir / "all_reduce_perf.txt", scaled);
  ImportOptions o;
  o.run = run;
  Dataset d;
  d.load(write_records(dir / "results.jsonl", import_file("nccl-tests", dir / "all_reduce_perf.txt", o)));
  return collect_evidence(d);
}

}  // namespace

// Imports carry one figure per point, no spread: a 2x slowdown is UNKNOWN, and what it says would
// decide is not another run of the same kind but repeats of the tool or a history, which does decide.
TEST(Compare, AnImportWithoutSpreadSaysWhatWouldDecideAndAHistoryDecides) {
  const auto base = imported_run("i-base", 1), slow = imported_run("i-slow", 2);
  const auto cs = compare(base, slow, {});
  const Comparison& time = cs[find_index(cs, "time_us")];
  ASSERT_EQ(time.change, Change::unknown) << time.significance;
  EXPECT_NE(time.significance.find("nccl-tests printed one figure per point (the summary of 20 iterations)"), std::string::npos)
      << time.significance;
  EXPECT_NE(time.significance.find("import 5 or more runs of nccl-tests"), std::string::npos) << time.significance;
  EXPECT_NE(time.significance.find("compare --db"), std::string::npos) << time.significance;
  // A history whose runs of this machine class vary by 1%: the 2x stands out of it.
  CompareOptions o;
  for (const auto& c : cs) o.run_noise[c.key.id()] = {0.01, 10};
  const auto judged = compare(base, slow, o);
  const Comparison& t = judged[find_index(judged, "time_us")];
  EXPECT_EQ(t.change, Change::regressed) << t.significance;
  EXPECT_EQ(t.significance, "beyond the ±1.0% 10 runs here vary");
}
