// Figures derived from measurements, computed once: what a step records and what the report shows
// of the same records are the same numbers (issue 43). Runs the real binary, then reads its records
// as `rocebench report`, thresholds and compare do.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "process_util.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/dataset.hpp"
#include "rocebench/transport/verbs/rc.hpp"

using namespace rocebench;
using rbtest::fs::path;

namespace {

// models.scaling on a shipped timeline at 1, 2 and 3 ranks (or `sizes`), into `dir`.
void train_scaling(const path& dir, const std::string& name, const std::vector<std::string>& more = {}) {
  std::vector<std::string> argv = {ROCEBENCH_BINARY, "train", "--model", "resnet20_cifar", "--engine", "replay", "--timeline",
                                   "cpu-resnet20_cifar-fp32-b16", "--batch", "16", "--iters", "2", "--warmup", "0",
                                   "--results-dir", (dir / name).string()};
  argv.insert(argv.end(), more.begin(), more.end());
  if (std::find(more.begin(), more.end(), "--world-sizes") == more.end()) argv.insert(argv.end(), {"--world-sizes", "1,2,3"});
  ASSERT_EQ(rbtest::run(argv, dir, name, {}, 300), 0) << rbtest::slurp(dir / (name + ".err"));
}

// The models.scaling records of a results file with a speedup, by world size.
std::map<int, json> scaling_records(const path& results) {
  std::map<int, json> out;
  for (const json& r : read_records(results).records) {
    if (r.value("step", "") == "models.scaling" && r.value("status", "") == "ok" && r["metrics"].contains("speedup"))
      out[r["world"].get<int>()] = r;
  }
  return out;
}

const reports::ScalingPoint* point_at(const reports::Aggregate& a, int gpus) {
  for (const auto& s : a.scaling) {
    if (reports::param_text(s.key, "mode") == "data_parallel") return s.at(gpus);
  }
  return nullptr;
}

}  // namespace

// Speedup and efficiency: the record's (what compare and history judge) and the report's (what the
// tables show and thresholds judge) are one number, of one run and pooled over two.
TEST(DerivedFigures, TheRecordsSpeedupAndEfficiencyAreTheReports) {
  RBTEST_NEEDS_ROCEBENCH();
  const path dir = rbtest::temp_dir("derived");
  train_scaling(dir, "a");
  train_scaling(dir, "b");
  const auto a = scaling_records(dir / "a" / "results.jsonl"), b = scaling_records(dir / "b" / "results.jsonl");
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);

  reports::Dataset one;
  one.load(dir / "a" / "results.jsonl");
  const reports::Aggregate report = reports::aggregate(one);
  for (const auto& [world, r] : a) {
    const reports::ScalingPoint* p = point_at(report, world);
    ASSERT_NE(p, nullptr) << world;
    ASSERT_TRUE(p->speedup && p->efficiency) << world << ": " << p->missing;
    EXPECT_EQ(*p->speedup, r["metrics"]["speedup"].get<double>()) << world << " ranks";
    EXPECT_EQ(*p->efficiency, r["metrics"]["efficiency"].get<double>()) << world << " ranks";
  }

  // Two runs: the report's figure is the one compare reads of the records (their median).
  reports::Dataset both;
  both.load(dir / "a" / "results.jsonl");
  both.load(dir / "b" / "results.jsonl");
  const reports::Aggregate pooled = reports::aggregate(both);
  const reports::EvidenceMap evidence = reports::collect_evidence(both);
  for (const auto& [world, r] : a) {
    const reports::ScalingPoint* p = point_at(pooled, world);
    ASSERT_NE(p, nullptr) << world;
    ASSERT_TRUE(p->speedup && p->efficiency) << world << ": " << p->missing;
    for (const char* metric : {"speedup", "efficiency"}) {
      const auto e = evidence.find(reports::MetricKey{"models.scaling", r["params"], world, metric}.id());
      ASSERT_NE(e, evidence.end()) << metric << " at " << world;
      ASSERT_EQ(e->second.second.values.size(), 2u) << metric << " at " << world;
      EXPECT_EQ(std::string(metric) == "speedup" ? *p->speedup : *p->efficiency, e->second.second.median())
          << metric << " at " << world << " ranks";
    }
  }
}

// A world size skipped for want of an RDMA device is missing from its own series, with that reason
// (the skip carries the series' params), not a point of some other series while its own says "no record".
TEST(DerivedFigures, ASkipOverVerbsIsMissingInItsSeriesWithItsReason) {
  RBTEST_NEEDS_ROCEBENCH();
  if (!verbs::device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  const path dir = rbtest::temp_dir("derived-verbs");
  train_scaling(dir, "verbs", {"--transport", "verbs", "--world-sizes", "1,2"});
  reports::Dataset data;
  data.load(dir / "verbs" / "results.jsonl");
  const reports::Aggregate report = reports::aggregate(data);
  ASSERT_EQ(report.scaling.size(), 1u) << "the skip makes no series of its own";
  const reports::ScalingPoint* two = point_at(report, 2);
  ASSERT_NE(two, nullptr);
  EXPECT_FALSE(two->images_per_s);
  EXPECT_NE(two->missing.find("no RDMA device"), std::string::npos) << two->missing;
  const reports::ScalingPoint* one = point_at(report, 1);
  ASSERT_NE(one, nullptr);
  EXPECT_TRUE(one->images_per_s) << one->missing;
}
