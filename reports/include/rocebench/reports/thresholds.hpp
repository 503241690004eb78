#pragma once
// Acceptance thresholds: a top-level "thresholds" array in a plan or a thresholds file
// (reports/schema/thresholds.schema.json), e.g.
//   {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864},
//    "metric": "busbw_GBps", "op": ">=", "value": 10.0}
//   {"name": "ResNet-50 at 128 GPUs", "metric": "efficiency", "where": {"model": "resnet50"},
//    "gpus": 128, "op": ">=", "value": 0.75}
// speedup and efficiency (and images_per_s with "gpus") are judged on the training scaling series;
// every other metric on the records of `step` whose params (plus "world" and "host") match `where`.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

struct Threshold {
  std::string name, step, metric, op;
  json where = json::object();
  double value = 0;
  std::optional<int> gpus;
};

// Reads the thresholds of a plan or thresholds file; errors name the file, line and field.
// A file without a "thresholds" array has none.
std::vector<Threshold> load_thresholds(const std::filesystem::path& file);

bool holds(double observed, const std::string& op, double limit);

// One verdict per threshold: it fails when any matching point fails, and is missing when no
// record matched.
std::vector<Verdict> judge(const std::vector<Threshold>& thresholds, const Dataset& data, const Aggregate& agg);

}  // namespace rocebench::reports
