#pragma once
// Acceptance thresholds: a top-level "thresholds" array in a plan or a thresholds file
// (reports/schema/thresholds.schema.json), e.g.
//   {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864},
//    "metric": "busbw_GBps", "op": ">=", "value": 10.0}
//   {"name": "ResNet-50 at 128 GPUs", "metric": "efficiency", "where": {"model": "resnet50"},
//    "gpus": 128, "op": ">=", "value": 0.75}
//   {"name": "busbw >= 0.9 x link", "step": "collectives.allreduce", "where": {"bytes": 67108864},
//    "metric": "busbw_GBps", "op": ">=", "value": 0.9, "relative_to": "link"}
// speedup and efficiency (and images_per_s with "gpus") are judged on the training scaling series;
// every other metric on the records of `step` whose params (plus "world" and "host") match `where`.
// With "relative_to": "link" the value is a fraction of the link speed (bandwidth metrics only):
// "link_Gbps" when the threshold gives it, else the slowest link among the hosts involved (their
// netdevs' speed in the run record); a point whose link speed is unknown is a missing verdict.
#include <filesystem>
#include <map>
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
  bool of_link = false;                // value is a fraction of the link speed
  std::optional<double> link_Gbps;     // the link speed the plan gives
  double per_Gbps = 0;                 // the metric's unit per Gb/s (1/8 for *_GBps)
};

// Link speed in Gb/s of each host a run record describes: the fastest netdev that is up (the RoCE
// NIC of a GPU node; management ports are slower), or none when no netdev reported a speed.
std::map<std::string, double> link_speeds(const json& run_record);

// Reads the thresholds of a plan or thresholds file; errors name the file, line and field.
// A file without a "thresholds" array has none.
std::vector<Threshold> load_thresholds(const std::filesystem::path& file);

bool holds(double observed, const std::string& op, double limit);

// One verdict per threshold: it fails when any matching point fails, and is missing when no
// record matched.
std::vector<Verdict> judge(const std::vector<Threshold>& thresholds, const Dataset& data, const Aggregate& agg);

}  // namespace rocebench::reports
