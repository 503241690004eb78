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

namespace {

std::vector<Verdict> judge_file(const std::filesystem::path& dir, const std::string& thresholds, const std::vector<json>& records) {
  write_file(dir / "t.json", thresholds);
  Dataset d;
  d.load(write_records(dir / "results.jsonl", records));
  return judge(load_thresholds(dir / "t.json"), d, aggregate(d));
}

std::vector<json> with_run_record(const std::vector<std::pair<std::string, int>>& hosts) {
  std::vector<json> records{run_record("r", "2026-11-29T02:00:00Z", hosts)};
  for (const auto& r : full_run("r")) records.push_back(r);
  return records;
}

}  // namespace

// "busbw >= 0.9 x link": the link of the hosts that ran the ranks, from the run record's netdevs.
TEST(Thresholds, FractionOfTheLinkSpeed) {
  const auto dir = temp_dir();
  const std::string thresholds = R"({"thresholds": [
    {"name": "busbw 0.8 link", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 0.8, "relative_to": "link"},
    {"name": "busbw 0.9 link", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 0.9, "relative_to": "link"},
    {"name": "busbw 0.9 of 80G", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 0.9, "relative_to": "link", "link_Gbps": 80},
    {"name": "RoCE write bw", "step": "microbench.probe", "where": {"transport": "verbs", "test": "write_bw"}, "metric": "bw_avg_Gbps", "op": ">=", "value": 0.9, "relative_to": "link"}]})";
  // 100 Gb/s = 12.5 GB/s: busbw 11.1 (2 ranks) and 10.7 (4 ranks) hold 0.8 (10 GB/s), not 0.9 (11.25).
  const auto vs = judge_file(dir, thresholds, with_run_record({{"node01", 100000}, {"node02", 100000}}));
  EXPECT_EQ(named(vs, "busbw 0.8 link").outcome, Outcome::pass) << named(vs, "busbw 0.8 link").message;
  EXPECT_EQ(named(vs, "busbw 0.9 link").outcome, Outcome::fail);
  EXPECT_NE(named(vs, "busbw 0.9 link").message.find("2 of 2 points fail"), std::string::npos) << named(vs, "busbw 0.9 link").message;
  EXPECT_NE(named(vs, "busbw 0.9 link").message.find("limit 11.25 = 0.9 × 100 Gb/s link"), std::string::npos)
      << named(vs, "busbw 0.9 link").message;
  EXPECT_EQ(named(vs, "busbw 0.9 of 80G").outcome, Outcome::pass);  // the plan's 80 Gb/s: 9 GB/s
  EXPECT_EQ(named(vs, "RoCE write bw").outcome, Outcome::pass);     // 92 Gb/s over node01 -> node02

  // 4 ranks run on node01 and node02, and node02's slower link bounds them (0.9 x 80 Gb/s = 9 GB/s);
  // 2 ranks run on node01 alone (11.25 GB/s).
  const auto slow = judge_file(dir, thresholds, with_run_record({{"node01", 100000}, {"node02", 80000}}));
  EXPECT_NE(named(slow, "busbw 0.9 link").message.find("1 of 2 points fail"), std::string::npos) << named(slow, "busbw 0.9 link").message;
  EXPECT_EQ(named(slow, "RoCE write bw").outcome, Outcome::pass);  // 92 >= 0.9 x 80

  // node02 reported no speed: the 4-rank point cannot be judged, and the verdict says why.
  const auto unknown = judge_file(dir, thresholds, with_run_record({{"node01", 100000}, {"node02", 0}}));
  EXPECT_EQ(named(unknown, "busbw 0.8 link").outcome, Outcome::missing);
  EXPECT_NE(named(unknown, "busbw 0.8 link").message.find("link speed of node02 unknown"), std::string::npos)
      << named(unknown, "busbw 0.8 link").message;
  EXPECT_EQ(named(unknown, "busbw 0.9 of 80G").outcome, Outcome::pass);  // the plan's speed needs no record
  const auto no_run = judge_file(dir, thresholds, full_run("r"));
  EXPECT_EQ(named(no_run, "busbw 0.8 link").outcome, Outcome::missing);
  EXPECT_NE(named(no_run, "busbw 0.8 link").message.find("no run record"), std::string::npos);
}

TEST(Thresholds, OnlyBandwidthsCanBeRelativeToTheLink) {
  const auto dir = temp_dir();
  write_file(dir / "t.json", "{\"thresholds\": [\n  {\"name\": \"x\", \"step\": \"microbench.probe\", \"metric\": \"lat_us_p50\",\n"
                             "   \"op\": \"<=\", \"value\": 0.5, \"relative_to\": \"link\"}]}\n");
  try {
    load_thresholds(dir / "t.json");
    FAIL() << "a latency cannot be a fraction of a link speed";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("thresholds[0].metric"), std::string::npos) << e.what();
  }
  write_file(dir / "u.json", R"({"thresholds": [{"name": "x", "step": "a.b", "metric": "busbw_GBps", "op": ">=", "value": 0.9, "relative_to": "line"}]})");
  EXPECT_THROW(load_thresholds(dir / "u.json"), InputError);
  write_file(dir / "v.json", R"({"thresholds": [{"name": "x", "step": "a.b", "metric": "busbw_GBps", "op": ">=", "value": 0.9, "relative_to": "link", "link_Gbps": 0}]})");
  EXPECT_THROW(load_thresholds(dir / "v.json"), InputError);
}
