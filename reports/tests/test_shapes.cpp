#include <gtest/gtest.h>

#include <functional>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/report.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/thresholds.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

// Six records of one models.train series in `run`, each with `metric` near `value`.
Dataset train_run(const std::string& run, const std::string& step, const std::string& metric, double value) {
  std::vector<json> records;
  for (int i = 0; i < 6; ++i) {
    json r = train(run, "resnet50", "single", 1, 1000 + i);
    r["step"] = step;
    r["metrics"][metric] = value * (1 + 0.01 * i);
    records.push_back(r);
  }
  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  return d;
}

const Comparison& of_metric(const std::vector<Comparison>& cs, const std::string& metric) {
  for (const auto& c : cs) {
    if (c.key.metric == metric) return c;
  }
  throw std::runtime_error("no comparison of " + metric);
}

std::string thrown_by(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Shapes, EachModuleDeclaresItsStepKindsWithUnitAndDirection) {
  const Shapes& s = declared_shapes();
  for (const char* step : {"microbench.probe", "microbench.allpairs", "microbench.host", "collectives.allreduce",
                           "collectives.alltoall", "models.train", "models.scaling", "harness.rendezvous"}) {
    EXPECT_NE(s.of(step), nullptr) << step;
  }
  EXPECT_EQ(s.better("collectives.allreduce", "busbw_GBps"), Better::higher);
  EXPECT_EQ(s.better("collectives.allreduce", "time_us"), Better::lower);
  EXPECT_EQ(s.better("microbench.probe", "lat_us_p99"), Better::lower);
  EXPECT_EQ(s.better("models.train", "images_per_s"), Better::higher);
  EXPECT_EQ(s.better("models.scaling", "speedup"), Better::higher);
  EXPECT_EQ(s.better("models.scaling", "efficiency"), Better::higher);
  // Names mislead: a wait per step holds "per_s" and a spread holds "bw"; both are better lower.
  EXPECT_EQ(s.better("models.train", "input_wait_ms_per_step"), Better::lower);
  EXPECT_EQ(s.better("microbench.host", "bw_GBps_stddev"), Better::lower);
  EXPECT_EQ(s.better("models.train", "loss"), Better::none);
  EXPECT_EQ(s.better("models.train", "no_such_metric"), Better::undeclared);
  EXPECT_EQ(s.better("no.such_step", "busbw_GBps"), Better::undeclared);
  EXPECT_EQ(s.of("collectives.allreduce")->metric("busbw_GBps")->unit, "GBps");

  // What the samples hold: per variant of a probe, per step kind elsewhere.
  const StepShape& probe = *s.of("microbench.probe");
  EXPECT_EQ(probe.sampled_of({{"test", "write_lat"}}), "lat_us_p50");
  EXPECT_EQ(probe.sampled_of({{"test", "bw"}}), "");
  EXPECT_EQ(probe.variant_of({{"test", "send_lat"}})->name, "latency");
  EXPECT_EQ(probe.variant_of({{"test", "lateral"}}), nullptr);
  EXPECT_EQ(s.of("models.scaling")->sampled_of({}), "step_time_ms_p50");
  EXPECT_EQ(sampled_metric("collectives.broadcast", json::object()), "time_us");
  EXPECT_EQ(sampled_metric("a.b", json::object()), "");
  // The rate over the sampled time: images/s = batch × ranks / step time (models/shape.json), no
  // rate where none is declared.
  const auto& images = s.of("models.scaling")->metric("images_per_s")->rate;
  ASSERT_TRUE(images);
  EXPECT_EQ(images->count, (std::vector<std::string>{"batch", "ranks"}));
  EXPECT_DOUBLE_EQ(images->of({{"batch", 16}, {"ranks", 2}}, 100), 320);
  EXPECT_FALSE(s.of("collectives.allreduce")->metric("busbw_GBps")->rate);
}

TEST(Shapes, ABadDeclarationIsAnErrorNamingItsFileAndField) {
  auto load = [](const json& declarations) { return [declarations] { Shapes{json{{"x/shape.json", declarations}}}; }; };
  const json good = {{"steps", {"x.y"}}, {"x", "bytes"}, {"metrics", {{"t_us", {{"unit", "us"}, {"better", "lower"}}}}}};
  EXPECT_EQ(thrown_by(load(json::array({good}))), "");

  json bad = good;
  bad["metrics"]["t_us"]["better"] = "up";
  const std::string e = thrown_by(load(json::array({bad})));
  EXPECT_NE(e.find("x/shape.json"), std::string::npos) << e;
  EXPECT_NE(e.find("/0/metrics/t_us/better"), std::string::npos) << e;
  EXPECT_NE(e.find("'up' is not higher, lower or none"), std::string::npos) << e;

  bad = good;
  bad["sampled"] = "time_us";
  EXPECT_NE(thrown_by(load(json::array({bad}))).find("'time_us' is not one of the declared metrics"), std::string::npos);
  EXPECT_NE(thrown_by(load(json::array({good, good}))).find("step 'x.y' is declared twice"), std::string::npos);
  bad = good;
  bad.erase("x");
  EXPECT_NE(thrown_by(load(json::array({bad}))).find("missing \"x\""), std::string::npos);
  // A rate's count: beside "inverse of sampled", over a sampled time.
  bad = good;
  bad["metrics"]["ops_per_s"] = {{"unit", "ops/s"}, {"better", "higher"}, {"count", json::array({"ops"})}};
  EXPECT_NE(thrown_by(load(json::array({bad}))).find("field '/0/metrics/ops_per_s/count': a count needs \"samples\""), std::string::npos)
      << thrown_by(load(json::array({bad})));
  bad["metrics"]["ops_per_s"]["samples"] = "inverse of sampled";
  bad["metrics"]["t_us"]["unit"] = "ticks";
  bad["sampled"] = "t_us";
  EXPECT_NE(thrown_by(load(json::array({bad}))).find("a count needs a sampled metric that is a time"), std::string::npos)
      << thrown_by(load(json::array({bad})));
  bad["metrics"]["t_us"]["unit"] = "us";
  EXPECT_EQ(thrown_by(load(json::array({bad}))), "");
  bad["metrics"]["ops_per_s"]["count"] = json::array({1});
  EXPECT_NE(thrown_by(load(json::array({bad}))).find("field '/0/metrics/ops_per_s/count/0': expected a string"), std::string::npos)
      << thrown_by(load(json::array({bad})));
}

TEST(Shapes, ANewDeclarationIsAllItTakesToGetADirection) {
  const json declaration = {{"steps", {"lab.cooling"}}, {"x", "world"},
                            {"metrics", {{"fan_rpm", {{"unit", "rpm"}, {"better", "lower"}}},
                                         {"bw_Gbps", {{"unit", "Gbps"}, {"better", "lower"}}}}}};
  const Shapes s(json{{"lab/shape.json", json::array({declaration})}});
  EXPECT_EQ(s.better("lab.cooling", "fan_rpm"), Better::lower);
  EXPECT_EQ(s.better("lab.cooling", "bw_Gbps"), Better::lower) << "the declaration, not the name, decides";
}

TEST(Compare, DirectionIsTheDeclaredOneNotAGuessFromTheName) {
  // input_wait_ms_per_step holds "per_s", which a name-based guess took for a rate: ten times the
  // wait is a regression, as models/shape.json declares.
  const auto c = compare(collect_evidence(train_run("base", "models.train", "input_wait_ms_per_step", 1.0)),
                         collect_evidence(train_run("new", "models.train", "input_wait_ms_per_step", 10.0)), {});
  EXPECT_EQ(of_metric(c, "input_wait_ms_per_step").change, Change::regressed) << of_metric(c, "input_wait_ms_per_step").significance;
  EXPECT_EQ(of_metric(c, "images_per_s").change, Change::same);
}

TEST(Compare, AnUndeclaredMetricOrStepChangesVisiblyButIsNeverARegression) {
  for (const auto& [step, metric] : std::vector<std::pair<std::string, std::string>>{{"models.train", "fancy_ms"}, {"lab.cooling", "fan_rpm"}}) {
    const auto c = compare(collect_evidence(train_run("base", step, metric, 1.0)), collect_evidence(train_run("new", step, metric, 10.0)), {});
    const Comparison& m = of_metric(c, metric);
    EXPECT_EQ(m.change, Change::unknown) << step;
    EXPECT_NE(m.significance.find("undeclared (step " + step + " declares no metric " + metric), std::string::npos) << m.significance;
  }
  // A metric declared without a better direction changes, and is neither better nor worse.
  const auto c = compare(collect_evidence(train_run("base", "models.train", "loss", 1.0)),
                         collect_evidence(train_run("new", "models.train", "loss", 10.0)), {});
  EXPECT_EQ(of_metric(c, "loss").change, Change::unknown);
  EXPECT_NE(of_metric(c, "loss").significance.find("neither direction is better"), std::string::npos);
}

TEST(Thresholds, TheStepsDeclarationNamesTheMetricAndItsUnit) {
  const auto dir = temp_dir();
  auto threshold = [&](const std::string& step, const std::string& metric, const std::string& extra) {
    write_file(dir / "t.json", R"({"thresholds": [{"name": "x", "step": ")" + step + R"(", "metric": ")" + metric +
                                   R"(", "op": ">=", "value": 0.5)" + extra + "}]}");
    return dir / "t.json";
  };
  // microbench.host declares bw_GBps_median in GBps: a link fraction needs no unit in the name.
  const auto t = load_thresholds(threshold("microbench.host", "bw_GBps_median", R"(, "relative_to": "link")"));
  EXPECT_DOUBLE_EQ(t.at(0).per_Gbps, 1.0 / 8);
  const std::string typo = thrown_by([&] { load_thresholds(threshold("collectives.allreduce", "busbw_Gbps", "")); });
  EXPECT_NE(typo.find("thresholds[0].metric"), std::string::npos) << typo;
  EXPECT_NE(typo.find("'busbw_Gbps' is not a metric step collectives.allreduce declares (its headlines: busbw_GBps, time_us)"),
            std::string::npos) << typo;
  const std::string step = thrown_by([&] { load_thresholds(threshold("collectives.allreduse", "busbw_GBps", "")); });
  EXPECT_NE(step.find("thresholds[0].step"), std::string::npos) << step;
  EXPECT_NE(step.find("'collectives.allreduse' is not a step kind that declares its records"), std::string::npos) << step;
}

TEST(Aggregate, RecordsNoDeclarationCoversAreListedNotDropped) {
  std::vector<json> records = full_run("r");
  json odd = train("r", "resnet50", "single", 1, 100);
  odd["step"] = "lab.cooling";
  records.push_back(odd);
  records.push_back(probe("r", "tcp", "lateral", 64, 5.0, "node01", "node02"));
  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  const Aggregate a = aggregate(d);
  ASSERT_EQ(a.undeclared.size(), 2u);
  EXPECT_EQ(a.undeclared[0], "step lab.cooling: no shape.json declares it, so no table shows its records");
  EXPECT_EQ(a.undeclared[1], "step microbench.probe: test 'lateral' is none of the declared ones, so no table shows its records");
  // The console summary and the report's inputs say so too.
  const std::string summary = console_summary(d, a, {});
  EXPECT_NE(summary.find("in no table (no declaration covers them):\n  step lab.cooling"), std::string::npos) << summary;
  const std::vector<Verdict> verdicts;
  const std::vector<std::string> files{"results.jsonl"};
  const auto sections = build_sections({&a, &verdicts, &d.issues, &files, nullptr});
  const Table* listed = nullptr;
  for (const auto& section : sections) {
    for (const auto& t : section.tables) {
      if (section.title == "Inputs" && t.title == "Records no declaration covers") listed = &t;
    }
  }
  ASSERT_NE(listed, nullptr) << "the report's inputs list them";
  EXPECT_EQ(listed->rows.size(), 2u);
}
