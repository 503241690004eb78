#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <atomic>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/changepoint.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/history.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

// `n` values around `level` with Gaussian noise of coefficient of variation `cv`; from index
// `at` on, the level is multiplied by 1 + step.
std::vector<double> series(std::size_t n, double level, double cv, std::size_t at, double step, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, cv);
  std::vector<double> x;
  for (std::size_t i = 0; i < n; ++i) x.push_back(level * (i >= at ? 1 + step : 1) * (1 + noise(rng)));
  return x;
}

// 40 nights around 100 with Gaussian noise of CV `cv`, then the nights given.
std::vector<double> quiet_then(double cv, unsigned seed, std::initializer_list<double> nights) {
  auto x = series(40, 100, cv, 0, 0, seed);
  x.insert(x.end(), nights);
  return x;
}

TrendVerdict judge_last(const std::vector<double>& x, std::size_t window, bool higher_is_better) {
  const JudgeOptions o;
  return judge(x, x.size() - window, e_divisive(x, o.detect), higher_is_better, o);
}

// A results file of one run on host `host`: an allreduce of time `time_us` (and its bandwidth).
// `cpu_pressure_pct`, when given, is stamped on the result as a run's rank does.
std::string run_file(const std::string& run, const std::string& time, double time_us, const std::string& cpu = "x86",
                     std::optional<double> cpu_pressure_pct = std::nullopt) {
  json r = run_record(run, time, {{"node01", 100000}});
  r["hosts"][0]["cpu"]["model"] = cpu;
  json result = collective(run, "allreduce", 2, 1 << 20, time_us, 1e6 / time_us);
  if (cpu_pressure_pct) result["cpu_pressure_pct"] = *cpu_pressure_pct;
  const auto file = temp_dir() / "results.jsonl";
  write_records(file, {r, result});
  return file.string();
}

std::string dump_db(const std::filesystem::path& db) {
  History h(db, History::Mode::existing);
  std::string out;
  for (const auto& s : h.series()) {
    out += s.machine + "|" + s.label() + "\n";
    for (const auto& p : s.points) out += " " + p.run + "=" + std::to_string(p.value) + "/" + std::to_string(p.n) + "\n";
  }
  return out;
}

}  // namespace

TEST(ChangePoint, FindsAStepWhereItIs) {
  const auto x = series(60, 100, 0.01, 37, 0.05, 1);
  const auto cps = e_divisive(x, {});
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 37u);
  EXPECT_NEAR(cps[0].step(), 0.05, 0.01);
  EXPECT_LT(cps[0].p, 1e-6);
}

TEST(ChangePoint, FindsTwoStepsAndNoneInNoise) {
  auto x = series(90, 100, 0.01, 30, 0.08, 2);
  for (std::size_t i = 60; i < x.size(); ++i) x[i] *= 0.9;
  const auto cps = e_divisive(x, {});
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0].index, 30u);
  EXPECT_EQ(cps[1].index, 60u);
  for (unsigned seed = 1; seed <= 20; ++seed) EXPECT_TRUE(e_divisive(series(100, 50, 0.02, 0, 0, seed), {}).empty()) << seed;
}

TEST(ChangePoint, SameHistorySameAnswer) {
  const auto x = series(200, 10, 0.03, 150, -0.1, 3);
  const auto a = e_divisive(x, {}), b = e_divisive(x, {});
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].p, b[i].p);
}

TEST(Verdict, SameWhenNothingMoved) {
  const auto v = judge_last(series(40, 100, 0.01, 0, 0, 4), 3, false);
  EXPECT_EQ(v.call, Call::same) << v.why;
}

TEST(Verdict, SlowerTimeIsARegressionFasterAnImprovement) {
  const auto slower = judge_last(series(40, 100, 0.01, 37, 0.10, 5), 3, false);
  EXPECT_EQ(slower.call, Call::regressed) << slower.why;
  ASSERT_TRUE(slower.change);
  EXPECT_EQ(slower.change->index, 37u);
  EXPECT_NEAR(slower.effect, 0.10, 0.02);
  // The same numbers as a bandwidth: higher is better.
  EXPECT_EQ(judge_last(series(40, 100, 0.01, 37, 0.10, 5), 3, true).call, Call::improved);
  EXPECT_EQ(judge_last(series(40, 100, 0.01, 37, -0.10, 5), 3, false).call, Call::improved);
}

TEST(Verdict, OneRunOffAsksForARerun) {
  auto x = series(40, 100, 0.01, 0, 0, 6);
  x.back() *= 1.2;
  const auto v = judge_last(x, 3, false);
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  EXPECT_EQ(v.more_runs, JudgeOptions{}.min_after - 1);
  EXPECT_NE(v.why.find("rerun"), std::string::npos) << v.why;
  // Two nights of a loaded machine are still not a step.
  x[x.size() - 2] *= 1.2;
  EXPECT_EQ(judge_last(x, 3, false).call, Call::unknown);
}

// A 5% step at CV 2% whose first night noise left nearer the old level than the new: the split
// with 3 runs after it is the step, and one run that noise explains does not make it a burst.
TEST(Verdict, AStepWhoseFirstNightLooksOldIsFlagged) {
  auto x = quiet_then(0.02, 13, {102.0, 105.5, 106.0});
  const auto v = judge_last(x, 3, false);
  EXPECT_EQ(v.call, Call::regressed) << v.why;
  ASSERT_TRUE(v.change);
  EXPECT_EQ(v.change->index, 40u);
  // A night at the old level beyond the noise of the new one is still a burst's edge, not a step.
  x[40] = 100;
  for (std::size_t i = 41; i < x.size(); ++i) x[i] = 125;
  EXPECT_EQ(judge_last(x, 3, false).call, Call::unknown);
}

// A 5% step at CV 2% whose split, over the whole series, lands 3 runs early (seed 68: noise put
// nights 37..39 a little high). The history alone shows no step there: the baseline stays whole.
TEST(Verdict, AStepPulledIntoTheHistoryIsStillJudged) {
  const auto x = series(43, 100, 0.02, 40, 0.05, 68);
  const JudgeOptions o;
  const auto cps = e_divisive(x, o.detect);
  ASSERT_EQ(cps.size(), 1u);
  ASSERT_EQ(cps[0].index, 37u);  // what the test is about: the split the judged runs pulled early
  const auto v = judge(x, 40, cps, false, o);
  EXPECT_EQ(v.call, Call::regressed) << v.why;
}

// A machine slow one night in four: three slow nights in a row come once in 64, too often to call a
// regression at 1%. UNKNOWN, with the runs that would decide.
TEST(Verdict, BurstNightsInARowAreUnknownNotARegression) {
  auto x = series(43, 100, 0.01, 0, 0, 15);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (i % 4 == 1 || i >= 40) x[i] *= 1.2;
  }
  const auto v = judge_last(x, 3, false);
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  ASSERT_GT(v.more_runs, 0u);
  EXPECT_NE(v.why.find("as far off"), std::string::npos) << v.why;
  // The reruns it asks for decide when they land where its nights did, though each lowers the level.
  auto rerun = x;
  JudgeOptions o;
  o.is_rerun.assign(x.size(), false);
  for (std::size_t i = 0; i < v.more_runs; ++i) {
    rerun.push_back(rerun[41]);
    o.is_rerun.push_back(true);
  }
  const auto decided = judge(rerun, 40, e_divisive(rerun, o.detect), false, o);
  EXPECT_EQ(decided.call, Call::regressed) << v.why << " then " << decided.why;
  // The same step on a machine without bursts is a regression.
  for (std::size_t i = 0; i < 40; ++i) {
    if (i % 4 == 1) x[i] /= 1.2;
  }
  EXPECT_EQ(judge_last(x, 3, false).call, Call::regressed);
}

// An improvement is held to a stricter test than a regression: the same step, seen as a time and
// as a bandwidth, is a regression one way and not yet an improvement the other.
TEST(Verdict, AnImprovementNeedsMoreEvidenceThanARegression) {
  const auto x = quiet_then(0.02, 16, {103.0, 103.0, 103.0});
  const auto slower = judge_last(x, 3, false);
  EXPECT_EQ(slower.call, Call::regressed) << slower.why;
  const auto faster = judge_last(x, 3, true);
  EXPECT_NE(faster.call, Call::improved) << faster.why;
}

TEST(Verdict, AStallInTheBaselineDoesNotHideAStep) {
  auto x = series(40, 100, 0.01, 37, 0.10, 12);
  x[10] *= 40;  // one night on a machine busy with something else
  x[20] *= 30;
  const auto v = judge_last(x, 3, false);
  EXPECT_EQ(v.call, Call::regressed) << v.why;
}

TEST(Verdict, NoisySeriesIsUnknownNotAGuess) {
  const auto v = judge_last(series(40, 100, 0.08, 37, 0.05, 7), 3, false);
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  EXPECT_NE(v.why.find("CV"), std::string::npos) << v.why;
}

// At CV 5% a 5% step needs about 60 more runs: the verdict says to lower the noise instead of asking
// an operator for reruns no one makes.
TEST(Verdict, SeriesTooNoisyForAFewRerunsAreToldToLowerTheNoise) {
  const auto v = judge_last(series(43, 100, 0.05, 0, 0, 9), 3, false);
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  EXPECT_EQ(v.more_runs, 0u) << v.why;
  EXPECT_NE(v.why.find("over 5 more runs would decide: lower the noise"), std::string::npos) << v.why;
}

// Reruns repeat their night (the same build, the same night): a step starts at a night, never among
// its reruns. Here the third night's run and its first rerun sit at the old level and three more
// reruns 10% above: that night disagrees with itself, which is not a step after its first rerun.
TEST(Verdict, AStepStartsAtANightNeverInsideItsReruns) {
  std::vector<double> x;
  for (int i = 0; i < 40; ++i) x.push_back(100 + (i % 5) - 2);
  for (double v : {100.0, 100.0, 100.0, 100.0, 110.0, 110.0, 110.0}) x.push_back(v);
  JudgeOptions o;
  o.is_rerun.assign(x.size(), false);
  for (std::size_t i = 43; i < x.size(); ++i) o.is_rerun[i] = true;  // the third night's reruns
  const auto v = judge(x, 40, e_divisive(x, o.detect), false, o);
  EXPECT_NE(v.call, Call::regressed) << v.why;
  ASSERT_TRUE(v.change);
  EXPECT_LE(v.change->index, 42u) << v.why;
}

// Runs in two regimes (a third of them 8 sigma slower, as this machine's allreduce sizes land): the
// t-test's standard error must grow with them. Measured over 2,000 series, the claimed standard
// error of a 40-run level is 0.62 of its real spread (0.53 with the normal-noise sigma it had); the
// rank test every step must also pass covers the rest.
TEST(ChangePoint, TwoRegimesWidenTheTTestsNoise) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 1);
  std::bernoulli_distribution slower(1.0 / 3);
  std::vector<double> levels;
  double claimed = 0;
  const int trials = 2000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x;
    for (int i = 0; i < 43; ++i) x.push_back(100 + noise(rng) + (slower(rng) ? 8 : 0));
    const auto cp = t_test(x, 0, 40, 43);
    levels.push_back(cp.mean_before);
    claimed += cp.stdev * std::sqrt(1.0104 / 40) / trials;
  }
  double mean = 0, var = 0;
  for (double l : levels) mean += l / trials;
  for (double l : levels) var += (l - mean) * (l - mean) / (trials - 1);
  EXPECT_GT(claimed / std::sqrt(var), 0.58);
}

TEST(Verdict, SignificantButTinyIsSame) {
  const auto v = judge_last(series(60, 100, 0.001, 57, 0.01, 8), 3, false);
  EXPECT_EQ(v.call, Call::same) << v.why;
  ASSERT_TRUE(v.change);
  EXPECT_LT(v.change->p, 0.01);
}

// Three runs of history, five needed: later nights decide, reruns (which join the judged night, not
// the baseline) never would.
TEST(Verdict, ShortHistoryIsUnknownUntilMoreNights) {
  const auto v = judge_last(series(4, 100, 0.01, 0, 0, 9), 1, false);
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  EXPECT_EQ(v.more_nights, 2u) << v.why;
  EXPECT_EQ(v.more_runs, 0u) << v.why;
  EXPECT_NE(v.why.find("2 more night(s) decide"), std::string::npos) << v.why;
}

TEST(History, MachineClassFromHostsAndMissingFieldNamed) {
  json r = run_record("r1", "2026-01-01T00:00:00Z", {{"a", 0}, {"b", 0}});
  r["hosts"][0]["gpu"]["devices"] = {{{"name", "NVIDIA H100"}}, {{"name", "NVIDIA H100"}}};
  r["hosts"][0]["rdma"]["devices"] = {{{"name", "mlx5_0"}}, {{"name", "mlx5_1"}}};
  EXPECT_EQ(machine_class(r, "f"), "x86 / 2x NVIDIA H100 / 2x mlx5 + x86 / no GPU / no RDMA NIC");
  r["hosts"][1]["cpu"]["model"] = "";
  try {
    machine_class(r, "results.jsonl");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("results.jsonl"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("hosts[1].cpu.model"), std::string::npos) << e.what();
  }
}

TEST(History, RunWithoutMachineClassIsRefusedAndNothingAdded) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  json r = run_record("r1", "2026-01-01T00:00:00Z", {{"node01", 0}});
  r["hosts"][0]["cpu"]["model"] = "";  // /proc/cpuinfo on arm64 has no "model name"
  const auto file = write_records(temp_dir() / "results.jsonl", {r, collective("r1", "allreduce", 2, 1024, 10, 1)});
  const auto good = run_file("r0", "2025-12-31T00:00:00Z", 10);
  EXPECT_THROW(
      try { h.add({good, file.string()}); } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("hosts[0].cpu.model"), std::string::npos) << e.what();
        throw;
      },
      InputError);
  EXPECT_TRUE(h.runs().empty());  // the good file before it was not added either
  EXPECT_EQ(h.add({file.string()}, {.machine = "lab-a"}).added.size(), 1u);  // --machine gives the class
  EXPECT_EQ(h.runs().at(0).machine, "lab-a");
  // Records imported from other tools have no run record: --machine and the results' run id do.
  const auto imported = write_records(temp_dir() / "results.jsonl", {collective("imp", "allreduce", 2, 1024, 10, 1)});
  EXPECT_THROW(h.add({imported.string()}), InputError);
  EXPECT_EQ(h.add({imported.string()}, {.machine = "lab-a"}).added, std::vector<std::string>{"imp"});
}

TEST(History, AddingARunTwiceChangesNothing) {
  const auto db = temp_dir() / "h.sqlite";
  const auto f1 = run_file("r1", "2026-01-01T00:00:00Z", 100), f2 = run_file("r2", "2026-01-02T00:00:00Z", 101);
  History(db).add({f1, f2});
  const std::string before = dump_db(db);
  EXPECT_NE(before.find("r2="), std::string::npos);
  const auto again = History(db).add({f2, f1});
  EXPECT_TRUE(again.added.empty());
  EXPECT_EQ(again.already.size(), 2u);
  EXPECT_EQ(dump_db(db), before);
  EXPECT_EQ(History(db).runs().size(), 2u);
}

TEST(History, SeriesHoldPointsInRunOrderWithTheirSummary) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  h.add({run_file("late", "2026-01-03T00:00:00Z", 120), run_file("early", "2026-01-01T00:00:00Z", 100)});
  h.add({run_file("other", "2026-01-02T00:00:00Z", 50, "arm64")});  // another machine class: another series
  const auto all = h.series();
  const auto it = std::find_if(all.begin(), all.end(), [](const auto& s) { return s.metric == "time_us" && s.machine.starts_with("x86"); });
  ASSERT_NE(it, all.end());
  ASSERT_EQ(it->points.size(), 2u);
  EXPECT_EQ(it->points[0].run, "early");
  EXPECT_EQ(it->points[1].value, 120);
  EXPECT_EQ(it->points[0].revision, "abc1234");
  EXPECT_GT(it->points[0].n, 1u);  // the record's sample count, not one per record
  EXPECT_EQ(h.series("arm64 / no GPU / no RDMA NIC").size(), 4u);  // time, algbw, busbw, wrong
}

TEST(History, TwoWritersAtOnceBothLand) {
  const auto db = temp_dir() / "h.sqlite";
  History(db).add({run_file("r0", "2026-01-01T00:00:00Z", 100)});
  std::vector<std::string> files;
  for (int i = 1; i <= 16; ++i) files.push_back(run_file(fmt::format("r{:02}", i), fmt::format("2026-02-{:02}T00:00:00Z", i), 100 + i));
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      try {
        for (int i = w; i < 16; i += 2) History(db).add({files[i]});
      } catch (const std::exception& e) {
        ADD_FAILURE() << e.what();
        ++failures;
      }
    });
  }
  for (auto& t : writers) t.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(History(db).runs().size(), 17u);
}

TEST(History, LockedDatabaseIsAnInfrastructureErrorAndLosesNothing) {
  const auto db = temp_dir() / "h.sqlite";
  History(db).add({run_file("r0", "2026-01-01T00:00:00Z", 100)});
  History h(db, History::Mode::create, std::chrono::milliseconds(200));
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  try {
    h.add({run_file("r1", "2026-01-02T00:00:00Z", 100)});
    ADD_FAILURE() << "added under another writer's lock";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("locked"), std::string::npos) << e.what();
  }
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(History(db).runs().size(), 1u);
}

TEST(History, CorruptFileIsRefusedUntouched) {
  const auto db = temp_dir() / "h.sqlite";
  const std::string garbage(5000, 'x');
  write_file(db, garbage);
  try {
    History h(db);
    ADD_FAILURE() << "opened a corrupt file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(db.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was changed"), std::string::npos) << e.what();
  }
  EXPECT_EQ(read_file(db), garbage);
}

TEST(History, AnotherProgramsDatabaseIsRefused) {
  const auto db = temp_dir() / "other.sqlite";
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "CREATE TABLE t(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(other);
  EXPECT_THROW(History h(db), InputError);
}

TEST(History, OlderSchemaIsMigratedNewerRefused) {
  const auto db = temp_dir() / "h.sqlite";
  History(db, History::Mode::create, std::chrono::seconds(10), 1);
  EXPECT_EQ(History(db, History::Mode::existing, std::chrono::seconds(10), 1).schema_version(), 1);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  // A point as schema 1 held it, written by a rocebench of then.
  ASSERT_EQ(sqlite3_exec(raw,
                         "INSERT INTO runs VALUES(1, 'r1', '2026-01-01T00:00:00Z', 'abc', '0.1', 'local', 'x86', 'now');"
                         "INSERT INTO series VALUES(1, 'x86', 'collectives.allreduce', '{}', 2, 'time_us');"
                         "INSERT INTO points VALUES(1, 1, 100, 10, NULL, NULL, NULL);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  EXPECT_EQ(History(db).schema_version(), kHistorySchemaVersion);
  EXPECT_EQ(History(db).runs().size(), 1u);
  const auto migrated = History(db).series();
  ASSERT_EQ(migrated.size(), 1u);
  EXPECT_EQ(migrated.front().points.front().value, 100);
  EXPECT_FALSE(migrated.front().points.front().cpu_pressure_pct) << "added before the column: not stamped";
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_exec(raw, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
  sqlite3_close(raw);
  try {
    History h(db);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("99"), std::string::npos) << e.what();
  }
}

// A step that a busy machine's nights make (another task held the CPUs) asks for a rerun; the same
// step on quiet nights is a regression, as is one on nights barely busy.
TEST(History, ABusyNightAsksForARerunNotARegression) {
  for (const double busy : {0.0, 5.0, 45.0}) {
    const auto db = temp_dir() / "h.sqlite";
    History h(db);
    std::mt19937 rng(11);
    std::normal_distribution<double> noise(1, 0.005);
    for (int night = 1; night <= 30; ++night) {
      h.add({run_file(fmt::format("n{:02}", night), fmt::format("2026-03-{:02}T00:00:00Z", night),
                      (night >= 28 ? 110 : 100) * noise(rng), "x86", night == 29 ? busy : 0.0)});
    }
    const auto series = h.series();
    for (const auto& s : series) {
      ASSERT_TRUE(s.points[28].cpu_pressure_pct) << "stamped records keep their pressure";
      EXPECT_EQ(*s.points[28].cpu_pressure_pct, busy);
    }
    std::map<std::string, TrendVerdict> by_metric;
    for (const auto& c : check_history(series, h.runs(), {})) by_metric[c.series->metric] = c.verdict;
    if (busy < kCpuContendedPct) {
      EXPECT_EQ(by_metric["time_us"].call, Call::regressed) << busy << ": " << by_metric["time_us"].why;
      continue;
    }
    EXPECT_EQ(by_metric["time_us"].call, Call::unknown) << by_metric["time_us"].why;
    EXPECT_NE(by_metric["time_us"].why.find("CPU busy in run n29: a task waited for a CPU 45% of the time: rerun on a quiet "
                                            "machine"), std::string::npos) << by_metric["time_us"].why;
  }
}

TEST(History, CheckFlagsTheRegressedSeriesNamingItsRun) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(1, 0.005);
  for (int night = 1; night <= 30; ++night) {
    h.add({run_file(fmt::format("n{:02}", night), fmt::format("2026-03-{:02}T00:00:00Z", night), (night >= 28 ? 110 : 100) * noise(rng))});
  }
  const auto series = h.series();
  const auto checks = check_history(series, h.runs(), {});
  ASSERT_FALSE(checks.empty());
  EXPECT_EQ(checks.front().verdict.call, Call::regressed) << checks.front().verdict.why;  // regressions sort first
  std::map<std::string, Call> by_metric;
  for (const auto& c : checks) by_metric[c.series->metric] = c.verdict.call;
  EXPECT_EQ(by_metric["time_us"], Call::regressed);
  EXPECT_EQ(by_metric["busbw_GBps"], Call::regressed);  // bandwidth fell
  const auto& c = checks.front();
  EXPECT_EQ(c.series->points[c.verdict.change->index].run, "n28");
  CheckOptions since;
  since.since = "nope";
  EXPECT_THROW(check_history(series, h.runs(), since), InputError);
  // From n29 on, the step at n28 is history: the runs since are too few at the new level to judge.
  since.since = "n30";
  for (const auto& s : check_history(series, h.runs(), since)) EXPECT_NE(s.verdict.call, Call::regressed);
}

// 30 nights of an allreduce around 100 µs, six load bursts (112 µs) among them, and a 10% step on
// the last three: bursts or a step? UNKNOWN asks for reruns of the newest night.
void add_bursty_step(History& h) {
  std::mt19937 rng(5);
  std::normal_distribution<double> noise(1, 0.005);
  for (int night = 1; night <= 30; ++night) {
    const double level = night >= 28 ? 110 : night % 4 == 0 ? 112 : 100;
    h.add({run_file(fmt::format("n{:02}", night), fmt::format("2026-03-{:02}T00:00:00Z", night), level * noise(rng))});
  }
}

TrendVerdict time_us_verdict(const History& h) {
  const auto series = h.series();
  for (const auto& c : check_history(series, h.runs(), {})) {
    if (c.series->metric == "time_us") return c.verdict;
  }
  ADD_FAILURE() << "no time_us series checked";
  return {};
}

// Reruns added with --rerun-of join the night that asked for them, so the step is judged with all of
// them. Added as nights of their own, they push the step's first night out of the 3 nights judged:
// the step slides into the baseline and is never flagged.
TEST(History, RerunsJoinTheNightThatAskedForThem) {
  for (const bool joined : {true, false}) {
    const auto db = temp_dir() / "h.sqlite";
    History h(db);
    add_bursty_step(h);
    const TrendVerdict asked = time_us_verdict(h);
    ASSERT_EQ(asked.call, Call::unknown) << asked.why;
    ASSERT_GE(asked.more_runs, 1u) << asked.why;
    const std::size_t reruns = 5;  // more than asked for
    ASSERT_LE(asked.more_runs, reruns) << asked.why;
    std::mt19937 rng(6);
    std::normal_distribution<double> noise(1, 0.005);
    for (std::size_t i = 1; i <= reruns; ++i) {
      h.add({run_file(fmt::format("n30-rerun{}", i), fmt::format("2026-03-30T0{}:00:00Z", i), 110 * noise(rng))}, {.rerun_of = joined ? "n30" : ""});
    }
    const TrendVerdict after = time_us_verdict(h);
    EXPECT_EQ(after.call == Call::regressed, joined) << after.why;
  }
}

TEST(History, ARerunSitsInItsNightAndMustNameARunOfTheSameMachine) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  h.add({run_file("n1", "2026-03-01T00:00:00Z", 100)});
  h.add({run_file("n2", "2026-03-02T00:00:00Z", 100)});
  h.add({run_file("n1-rerun", "2026-03-03T00:00:00Z", 100)}, {.rerun_of = "n1"});
  h.add({run_file("n1-rerun2", "2026-03-04T00:00:00Z", 100)}, {.rerun_of = "n1-rerun"});  // a rerun's rerun joins the same night
  std::vector<std::string> order, nights;
  for (const auto& r : h.runs()) {
    order.push_back(r.run);
    nights.push_back(r.night);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"n1", "n1-rerun", "n1-rerun2", "n2"}));
  EXPECT_EQ(nights, (std::vector<std::string>{"n1", "n1", "n1", "n2"}));
  for (const auto& s : h.series()) {
    ASSERT_EQ(s.points.size(), 4u);
    EXPECT_EQ(s.points[2].run, "n1-rerun2");
    EXPECT_EQ(s.points[2].night, "n1");
  }
  const std::string before = dump_db(db);
  for (const auto& [of, cpu, says] : {std::tuple{"n9", "x86", "--rerun-of n9: no such run in"},
                                      std::tuple{"n2", "arm64", "--rerun-of n2: a run on 'x86 / no GPU / no RDMA NIC', but run n3 is on 'arm64"}}) {
    try {
      h.add({run_file("n3", "2026-03-05T00:00:00Z", 100, cpu)}, {.rerun_of = of});
      ADD_FAILURE() << of;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(dump_db(db), before) << "a refused rerun adds nothing";
}
// A rerun added to the nights judged is one more look at them: the level a step must pass is shared
// among the looks, or an operator rerunning until something shows would find it in noise.
TEST(Verdict, EachRerunIsAnotherLookSoTheLevelIsShared) {
  // One-sided p = 0.0145: below a regression's 1.575% (1.75 x 0.9 x 1%), not below half of it.
  const auto x = quiet_then(0.03, 3, {103.5, 103.5, 103.5});
  JudgeOptions o;
  o.min_effect = 0;
  EXPECT_EQ(judge(x, x.size() - 3, e_divisive(x, o.detect), false, o).call, Call::regressed);
  o.is_rerun.assign(x.size(), false);
  o.is_rerun.back() = true;
  const auto looked_twice = judge(x, x.size() - 3, e_divisive(x, o.detect), false, o);
  EXPECT_EQ(looked_twice.call, Call::unknown) << looked_twice.why;
}

// A step whose first judged run is still at the old level (window 3 on six old runs, then two at
// +30%) is named from its first moved run, not the last old one the split starts at.
TEST(Verdict, AStepIsNamedFromItsFirstMovedRun) {
  const auto x = quiet_then(0.005, 21, {130.0, 130.0});
  const auto v = judge_last(x, 3, false);
  ASSERT_TRUE(v.change) << v.why;
  EXPECT_EQ(v.start, 40u) << v.why;
  EXPECT_NE(v.why.find("2 run(s) +"), std::string::npos) << v.why;
}

// Five flat runs, then three 20% slower: none of the baseline is as far off, yet eight runs cannot
// pass the rank test at the night's level. The verdict says that, not that the baseline was as far off.
TEST(Verdict, ARankTestWithoutThePowerSaysSo) {
  const std::vector<double> x{100.0, 100.2, 99.8, 100.1, 99.9, 120.0, 120.3, 119.8};
  const auto v = judge(x, 5, e_divisive(x, {}), false, {});
  EXPECT_EQ(v.call, Call::unknown) << v.why;
  EXPECT_NE(v.why.find("none of the 5 runs before as far off, but that few runs cannot pass the rank test"), std::string::npos)
      << v.why;
  EXPECT_EQ(v.why.find("as far off often enough"), std::string::npos) << v.why;
}

// A night that measured nothing, or less than the night before, is unmeasured, and the night's own
// records say why; the check no longer skips it in silence.
TEST(History, ANightThatMeasuredLessThanTheNightBeforeIsUnmeasured) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  h.add({run_file("n1", "2026-03-01T00:00:00Z", 100)});
  h.add({run_file("n2", "2026-03-02T00:00:00Z", 100)});
  std::vector<HistorySeries> series;  // what unmeasured()'s answer points into
  auto gaps = [&] { return unmeasured(series = h.series(), h.runs()); };
  EXPECT_TRUE(gaps().empty());
  const std::size_t per_size = h.series().size();  // the metrics of one allreduce size
  // n3 measured another size, and skipped the one the nights before measured.
  json run = run_record("n3", "2026-03-03T00:00:00Z", {{"node01", 100000}});
  run["hosts"][0]["cpu"]["model"] = "x86";
  const json other = collective("n3", "allreduce", 2, 1 << 10, 10, 0.1);
  const json skipped = skipped_result("n3", "collectives.allreduce", "node01", 2,
                                      json::parse(h.series().front().params), "no RDMA device");
  h.add({write_records(temp_dir() / "results.jsonl", {run, other, skipped}).string()});
  auto g = gaps();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].night, std::vector<std::string>{"n3"});
  EXPECT_EQ(g[0].points, per_size);  // those of the other size
  ASSERT_EQ(g[0].missing.size(), per_size);
  EXPECT_EQ(g[0].why(*g[0].missing[0], h.notes_of(g[0].night)), "skip: no RDMA device");
  // n4 died before its first measurement: it measured nothing, and nothing says why.
  json crashed = run_record("n4", "2026-03-04T00:00:00Z", {{"node01", 100000}});
  crashed["hosts"][0]["cpu"]["model"] = "x86";
  h.add({write_records(temp_dir() / "results.jsonl", {crashed}).string()});
  g = gaps();
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].points, 0u);
  EXPECT_EQ(g[0].missing.size(), per_size);  // the other size, measured by n3
  EXPECT_TRUE(h.notes_of(g[0].night).empty());
}

// A run is added whole or not at all: a file with a bad line adds nothing, and --replace then
// completes the run in one transaction.
TEST(History, ABadLineAddsNothingAndReplaceCompletesTheRun) {
  const auto db = temp_dir() / "h.sqlite";
  History h(db);
  const auto good = run_file("r1", "2026-03-01T00:00:00Z", 100);
  const auto bad = temp_dir() / "results.jsonl";
  write_file(bad, read_file(good) + "{\"kind\": \"result\", \"broken\n");
  try {
    h.add({bad.string()});
    ADD_FAILURE() << "a file with a bad line was added";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(":3: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nothing was added"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(h.runs().empty());
  EXPECT_EQ(h.add({good}).added.size(), 1u);
  const auto faster = run_file("r1", "2026-03-01T00:00:00Z", 50);
  EXPECT_EQ(h.add({faster}).already, std::vector<std::string>{"r1"});
  const auto r = h.add({faster}, {.replace = "r1"});
  EXPECT_EQ(r.replaced, std::vector<std::string>{"r1"});
  for (const auto& s : h.series()) {
    ASSERT_EQ(s.points.size(), 1u);
    if (s.metric == "time_us") {
      EXPECT_EQ(s.points[0].value, 50);
    }
  }
  EXPECT_THROW(h.add({faster}, {.replace = "r2"}), InputError);  // the file is not run r2
}

// A history that is a device or a FIFO was opened by SQLite: "disk I/O error", exit 3. Refused by
// its kind, and nothing is written to it.
TEST(History, ADeviceOrFifoIsRefusedByItsKind) {
  const auto dir = temp_dir();
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  const std::vector<std::pair<std::filesystem::path, std::string>> cases{
      {"/dev/zero", "/dev/zero: is a character device, not a file"},
      {dir / "fifo", (dir / "fifo").string() + ": is a FIFO (named pipe), not a file"}};
  for (const auto& [file, message] : cases) {
    for (const auto mode : {History::Mode::create, History::Mode::existing}) {
      try {
        History h(file, mode);
        ADD_FAILURE() << "no error for " << file;
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()), message);
      }
    }
  }
}
