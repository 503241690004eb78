// Benchmark of `history check` on synthetic nightly histories made from real noise (#24 targets).
//   rb_history_bench noise DB [MAX_P] [TRIALS=16] [SEED=24]   A/A false alarms and 5% step detection
//                                                            (MAX_P: --max-p)
//   rb_history_bench speed DIR [SERIES=2000] [NIGHTS=365]
//
// noise: DB holds >= 20 runs of one build on one machine (history add). Each series' run-to-run
// residuals (value / median - 1) are resampled, with a fixed seed, into TRIALS histories of 60 nights:
//  - A/A: no change; every one of the last 30 nights is checked as the newest (window 3): the share of
//    series-nights called REGRESSED or IMPROVED is the false-alarm rate (target <= 1%).
//  - detection: the metric made 5% worse from night 40 on; nights 40, 41 and 42 are checked as the
//    newest: detected when any says REGRESSED (target >= 95% for series with CV <= 2%).
//  - reruns: as an operator would, each UNKNOWN's reruns (up to 10 a night) are made and added with
//    --rerun-of, joining that night; A/A flags and detection by night 42 after them, and the reruns
//    it took. They are not kept for later nights.
// Both are run on the series as measured, and on each series' residuals rescaled to CV 1% and 2%
// (the real shape of this machine's noise, tails and all, at a quiet machine's size).
// speed: writes NIGHTS results files of SERIES/4 allreduce records (4 metrics each) into DIR, adds
// them to DIR/history.sqlite, and times check_history over it (wall and CPU seconds).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "rocebench/common/stats.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/shapes.hpp"

using namespace rocebench;
using namespace rocebench::reports;

namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}


// 1.4826 MAD / median: the CV a quiet night-to-night series would show, robust to single outliers.
double robust_cv(const std::vector<double>& r) { return mad_sigma(r); }

// The call on the newest night of x (window 3), as check_history makes it.
JudgeOptions g_options;  // `noise DB [MAX_P]`: the defaults of history check unless given
// Histories per series and noise kind: 16 x 88 series give 1,408 step trials, a detection rate's
// standard error about 0.6 points at 95% (4 trials: 1.2 points, as wide as the gaps measured).
int g_trials = 16;
unsigned g_seed = 24;  // another seed gives the spread of the figures

Call call_on(const std::vector<double>& x, std::size_t first_new, bool higher_is_better) {
  const JudgeOptions& o = g_options;
  return judge(x, first_new, e_divisive(x, o.detect), higher_is_better, o).call;
}

constexpr std::size_t kMaxReruns = 10;  // a night's reruns: an operator stops asking after that

// The call on the window from `first_new`, after the reruns its UNKNOWNs ask for, each drawn by
// `rerun` and joining the newest night; `reruns` counts them.
Call call_after_reruns(std::vector<double> x, std::size_t first_new, bool higher_is_better, const std::function<double()>& rerun,
                       std::size_t& reruns) {
  JudgeOptions o = g_options;
  o.is_rerun.assign(x.size(), false);
  for (std::size_t made = 0;;) {
    const TrendVerdict v = judge(x, first_new, e_divisive(x, o.detect), higher_is_better, o);
    if (v.call != Call::unknown || v.more_runs == 0 || made >= kMaxReruns) return v.call;
    for (std::size_t i = 0; i < v.more_runs && made < kMaxReruns; ++i, ++made, ++reruns) {
      x.push_back(rerun());
      o.is_rerun.push_back(true);
    }
  }
}

struct Tally {
  std::size_t series = 0, aa_checks = 0, aa_flags = 0, aa_improved = 0, aa_unknown = 0, trials = 0, detected = 0, step_unknown = 0;
  std::size_t aa_flags_rerun = 0, aa_reruns = 0, detected_rerun = 0, step_reruns = 0;
};

void run_noise(const std::string& db) {
  const History h(db, History::Mode::existing);
  const auto all = h.series();
  std::map<std::string, Tally> tally;  // by noise kind
  std::mt19937_64 rng(g_seed);
  for (const auto& s : all) {
    if (s.points.size() < 20) continue;
    std::vector<double> values;
    for (const auto& p : s.points) values.push_back(p.value);
    const double m = median_of(values);
    if (m == 0) continue;  // "wrong": always 0
    std::vector<double> r;
    for (double v : values) r.push_back(v / m - 1);
    const double cv = robust_cv(r);
    const bool hib = declared_shapes().better(s.step, s.metric) == Better::higher;
    struct Kind {
      std::string name;
      double scale;
      double gaussian = 0;  // instead of the real residuals: normal noise of this CV, for reference
    };
    std::vector<Kind> kinds{{cv <= 0.02 ? "as measured, CV <= 2%" : "as measured, CV > 2%", 1.0},
                            {"Gaussian CV 1% (ref.)", 0, 0.01}, {"Gaussian CV 2% (ref.)", 0, 0.02}};
    if (cv > 0) {
      kinds.push_back({"rescaled to CV 1%", 0.01 / cv});
      kinds.push_back({"rescaled to CV 2%", 0.02 / cv});
    }
    for (const auto& k : kinds) {
      Tally& t = tally[k.name];
      ++t.series;
      std::uniform_int_distribution<std::size_t> pick(0, r.size() - 1);
      std::normal_distribution<double> gauss(0, k.gaussian > 0 ? k.gaussian : 1);
      auto night = [&] { return m * (1 + (k.gaussian > 0 ? gauss(rng) : k.scale * r[pick(rng)])); };
      for (int trial = 0; trial < g_trials; ++trial) {
        std::vector<double> x;
        for (int n = 0; n < 60; ++n) x.push_back(night());
        for (std::size_t newest = 30; newest < 60; ++newest) {
          const std::vector<double> upto(x.begin(), x.begin() + static_cast<long>(newest) + 1);
          const Call c = call_on(upto, newest - 2, hib);
          ++t.aa_checks;
          t.aa_flags += c == Call::regressed || c == Call::improved;
          t.aa_improved += c == Call::improved;
          t.aa_unknown += c == Call::unknown;
          const Call after = c == Call::unknown ? call_after_reruns(upto, newest - 2, hib, night, t.aa_reruns) : c;
          t.aa_flags_rerun += after == Call::regressed || after == Call::improved;
        }
        // 5% worse from night 40 on.
        const double worse = hib ? 1 / 1.05 : 1.05;
        for (std::size_t n = 40; n < 60; ++n) x[n] *= worse;
        ++t.trials;
        Call c = Call::same;
        for (std::size_t newest = 40; newest <= 42 && c != Call::regressed; ++newest) {
          c = call_on({x.begin(), x.begin() + static_cast<long>(newest) + 1}, newest - 2, hib);
        }
        t.detected += c == Call::regressed;
        t.step_unknown += c == Call::unknown;
        if (c == Call::unknown) c = call_after_reruns({x.begin(), x.begin() + 43}, 40, hib, [&] { return night() * worse; }, t.step_reruns);
        t.detected_rerun += c == Call::regressed;
      }
    }
  }
  fmt::print("{:<24} {:>6} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>8} {:>11}\n", "", "", "A/A", "", "A/A", "5% step", "step", "",
             "+ reruns", "");
  fmt::print("{:<24} {:>6} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>8} {:>11}\n", "noise", "series", "flagged", "improved",
             "UNKNOWN", "trials", "flagged", "UNKNOWN", "A/A flag", "step flag");
  fmt::print("{:<24} {:>6} {:>9} {:>9} {:>8} {:>7} {:>9} {:>9} {:>8} {:>11}\n", "", "", "per night", "", "", "", "by night 3",
             "night 3", "(reruns)", "(reruns)");
  for (const auto& [name, t] : tally) {
    auto pct = [](std::size_t a, std::size_t b) { return b ? 100.0 * static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    auto per = [](std::size_t a, std::size_t b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; };
    fmt::print("{:<24} {:>6} {:>8.2f}% {:>8.2f}% {:>7.1f}% {:>7} {:>8.1f}% {:>8.1f}% {:>8} {:>11}\n", name, t.series, pct(t.aa_flags, t.aa_checks),
               pct(t.aa_improved, t.aa_checks), pct(t.aa_unknown, t.aa_checks), t.trials, pct(t.detected, t.trials),
               pct(t.step_unknown, t.trials), fmt::format("{:.2f}% ({:.2f})", pct(t.aa_flags_rerun, t.aa_checks), per(t.aa_reruns, t.aa_checks)),
               fmt::format("{:.1f}% ({:.2f})", pct(t.detected_rerun, t.trials), per(t.step_reruns, t.trials)));
  }
  fmt::print("reruns: each UNKNOWN's, up to {} a night, joining it (history add --rerun-of); in brackets, the reruns made per "
             "night checked (A/A) or per step trial\n", kMaxReruns);
}

void run_speed(const std::filesystem::path& dir, int series, int nights) {
  std::filesystem::create_directories(dir);
  const auto db = dir / "history.sqlite";
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(1, 0.01);
  const int records = std::max(1, series / 4);
  std::vector<std::string> files;
  for (int n = 0; n < nights; ++n) {
    const std::string run = fmt::format("night{:03}", n);
    const auto file = dir / (run + ".jsonl");
    std::ofstream out(file);
    out << fmt::format(
        R"({{"schema":"rocebench.result/1","run":"{}","kind":"run","time":"2026-01-01T00:00:00Z","rocebench":{{"version":"0.1.0","git_revision":"r{}"}},)"
        R"("plan":{{"name":"nightly","sha256":"{}"}},"world":2,"launcher":"local","hosts":[{{"hostname":"node01","ranks":[0,1],"kernel":"Linux",)"
        R"("cpu":{{"model":"x86","cores":8}},"memory_bytes":1,"rdma":{{"rdma_core":"44","devices":[]}},"netdevs":[],"gpu":{{"devices":[]}}}}]}})",
        run, n, std::string(64, '0'));
    out << "\n";
    for (int i = 0; i < records; ++i) {
      const double t = (100.0 + i) * noise(rng) * (n >= nights - 2 && i % 50 == 0 ? 1.1 : 1.0);
      out << fmt::format(
          R"({{"schema":"rocebench.result/1","run":"{}","kind":"result","time":"2026-01-01T00:00:00Z","step":"collectives.allreduce","host":"node01","rank":0,"world":2,)"
          R"("params":{{"algorithm":"ring","bytes":{}}},"metrics":{{"time_us":{},"time_us_p50":{},"algbw_GBps":{},"busbw_GBps":{}}},"status":"ok",)"
          R"("samples":{{"n":20,"median":{}}}}})",
          run, 1024 * (i + 1), t, t, 1e3 / t, 1e3 / t, t);
      out << "\n";
    }
    files.push_back(file.string());
  }
  // Runs are ordered by time, then id: one time for all and ids that sort as nights do.
  auto wall = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  if (!std::filesystem::exists(db)) History(db).add(files);
  fmt::print("add: {} runs x {} series in {:.1f} s wall, {:.1f} s CPU\n", nights, records * 4,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(), cpu_seconds() - cpu);
  wall = std::chrono::steady_clock::now();
  cpu = cpu_seconds();
  const History h(db, History::Mode::existing);
  const auto all = h.series();
  const auto checks = check_history(all, h.runs(), {});
  std::map<Call, int> count;
  for (const auto& c : checks) ++count[c.verdict.call];
  fmt::print("check: {} series x {} nights in {:.2f} s wall, {:.2f} s CPU: {} REGRESSED, {} UNKNOWN, {} SAME\n", checks.size(), nights,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(), cpu_seconds() - cpu, count[Call::regressed],
             count[Call::unknown], count[Call::same]);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "noise") {
    if (args.size() > 2) g_options.detect.max_p = std::stod(args[2]);
    if (args.size() > 3) g_trials = std::stoi(args[3]);
    if (args.size() > 4) g_seed = static_cast<unsigned>(std::stoul(args[4]));
    run_noise(args[1]);
    return 0;
  }
  if (args.size() >= 2 && args[0] == "speed") {
    run_speed(args[1], args.size() > 2 ? std::stoi(args[2]) : 2000, args.size() > 3 ? std::stoi(args[3]) : 365);
    return 0;
  }
  std::cerr << "usage: rb_history_bench noise DB [MAX_P] [TRIALS=16] [SEED=24] | speed DIR [SERIES=2000] [NIGHTS=365]\n";
  return 2;
}
