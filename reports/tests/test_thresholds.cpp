#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/thresholds.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

const Verdict& named(const std::vector<Verdict>& vs, const std::string& name) {
  for (const auto& v : vs) {
    if (v.name == name) return v;
  }
  throw std::runtime_error("no verdict " + name);
}

}  // namespace

TEST(Thresholds, PlanThresholdsAreJudged) {
  const auto dir = temp_dir();
  write_file(dir / "plan.json", R"({
  "name": "acceptance",
  "steps": [],
  "thresholds": [
    {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 10.0},
    {"name": "busbw at 64MiB, 4 ranks", "step": "collectives.allreduce", "where": {"bytes": 67108864, "world": 4}, "metric": "busbw_GBps", "op": ">=", "value": 11.0},
    {"name": "efficiency at 8 GPUs", "metric": "efficiency", "where": {"model": "resnet50", "mode": "allreduce-rdma"}, "gpus": 8, "op": ">=", "value": 0.75},
    {"name": "tcp efficiency at 4 GPUs", "metric": "efficiency", "where": {"mode": "allreduce-tcp"}, "gpus": 4, "op": ">=", "value": 0.5},
    {"name": "RoCE latency", "step": "microbench.probe", "where": {"transport": "verbs", "test": "write_lat", "bytes": 2}, "metric": "lat_us_p50", "op": "<=", "value": 3},
    {"name": "alltoall", "step": "collectives.alltoall", "metric": "busbw_GBps", "op": ">", "value": 1}
  ]
})");
  const auto thresholds = load_thresholds(dir / "plan.json");
  ASSERT_EQ(thresholds.size(), 6u);
  Dataset d;
  d.load(write_records(dir / "results.jsonl", full_run("r")));
  const auto vs = judge(thresholds, d, aggregate(d));
  EXPECT_EQ(named(vs, "busbw at 64MiB").outcome, Outcome::pass) << named(vs, "busbw at 64MiB").message;
  EXPECT_EQ(named(vs, "busbw at 64MiB, 4 ranks").outcome, Outcome::fail);  // 10.7 < 11
  EXPECT_NE(named(vs, "busbw at 64MiB, 4 ranks").message.find("10.7"), std::string::npos);
  EXPECT_EQ(named(vs, "efficiency at 8 GPUs").outcome, Outcome::pass);      // 0.9
  EXPECT_EQ(named(vs, "tcp efficiency at 4 GPUs").outcome, Outcome::missing);  // no 4-GPU tcp record
  EXPECT_EQ(named(vs, "RoCE latency").outcome, Outcome::pass);
  EXPECT_EQ(named(vs, "alltoall").outcome, Outcome::missing);
  EXPECT_FALSE(all_passed(vs));
}

TEST(Thresholds, BadThresholdIsReportedWithFileLineAndField) {
  const auto dir = temp_dir();
  write_file(dir / "t.json", "{\n  \"thresholds\": [\n    {\"name\": \"x\", \"step\": \"collectives.allreduce\",\n     \"metric\": \"busbw_GBps\",\n     \"op\": \"=>\", \"value\": 1}\n  ]\n}\n");
  try {
    load_thresholds(dir / "t.json");
    FAIL() << "a bad op must be an error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("t.json:5"), std::string::npos) << m;
    EXPECT_NE(m.find("thresholds[0].op"), std::string::npos) << m;
  }
  write_file(dir / "u.json", R"({"thresholds": [{"name": "x", "metric": "busbw_GBps", "op": ">=", "value": 1}]})");
  EXPECT_THROW(load_thresholds(dir / "u.json"), InputError);  // a record metric needs its step
  write_file(dir / "v.json", R"({"thresholds": [{"name": "x", "metric": "efficiency", "op": ">=", "value": 1, "gpu": 8}]})");
  EXPECT_THROW(load_thresholds(dir / "v.json"), InputError);  // typo: "gpu"
}

TEST(Thresholds, Operators) {
  EXPECT_TRUE(holds(1, ">=", 1));
  EXPECT_FALSE(holds(1, ">", 1));
  EXPECT_TRUE(holds(1, "<=", 1));
  EXPECT_FALSE(holds(1, "<", 1));
  EXPECT_TRUE(holds(1, "==", 1));
}
