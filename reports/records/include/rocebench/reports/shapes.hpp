#pragma once
// What each step kind declares about its records, once and beside its code (<module>/shape.json,
// compiled in): the params that identify a series, its metrics with unit and direction, its
// headlines, and which metric its samples hold. Reports, compare, thresholds and history read these
// declarations instead of guessing from step and metric names; a step or metric nobody declared is
// `undeclared`, and the reader says so rather than guess.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rocebench/common/declared_rate.hpp"
#include "rocebench/common/record.hpp"

namespace rocebench::reports {

enum class Better { higher, lower, none, undeclared };  // none: informational (a count, a loss, a prediction)
const char* to_string(Better b);

struct MetricShape {
  std::string unit;  // "us", "Gbps", "GBps", "images/s" …
  Better better = Better::none;
  bool headline = false;
  bool inverse_of_sampled = false;  // a constant over the sampled metric (bandwidth = bytes / time)
  // With a "count" too: that constant, declared (images/s = batch × ranks / step time).
  std::optional<DeclaredRate> rate;
};

// Records of one step kind whose params select a kind of measurement (a probe's test: latency or
// bandwidth), each with its own headline and sampled metric.
struct Variant {
  std::string name;  // "latency"
  std::vector<std::string> values;  // of the selecting param
  std::string headline, sampled;    // sampled: empty when the samples hold no recorded metric
};

struct StepShape {
  std::vector<std::string> steps;
  std::vector<std::string> series;  // the params that identify a series (never ports or pids)
  std::string x;                    // the param (or "world") a series runs along
  // The report's view of these records: "training" (throughput and scaling by world size),
  // "prediction" (the same predicted, drawn beside the measured and never judged as one), "sweep"
  // (a collective's size and rank sweeps), "probe" (latency and bandwidth by message size), "pairs"
  // (a host-by-host matrix); "" when the report draws no table of them.
  std::string view;
  std::string sampled;              // what the samples hold, when no variant says otherwise
  std::string variant_param;        // the param that selects a variant ("" when none)
  std::vector<Variant> variants;
  std::map<std::string, MetricShape, std::less<>> metrics;

  const MetricShape* metric(std::string_view name) const;  // nullptr when undeclared
  // The variant a record with these params is (nullptr when the step has none or the value is not declared).
  const Variant* variant_of(const json& params) const;
  // The metric a record's samples hold, when the record does not say (samples.metric); "" when none.
  std::string sampled_of(const json& params) const;
};

class Shapes {
 public:
  // {"<file>": [declaration, …], …}; InputError naming the file and field of a bad declaration, or a
  // step declared twice.
  explicit Shapes(const json& files);
  const StepShape* of(std::string_view step) const;  // nullptr when undeclared
  Better better(std::string_view step, std::string_view metric) const;
  const std::vector<StepShape>& all() const { return shapes_; }
  // The declarations whose records the report shows in `view`.
  std::vector<const StepShape*> with_view(std::string_view view) const;

 private:
  std::vector<StepShape> shapes_;
  std::map<std::string, std::size_t, std::less<>> by_step_;
};

// The modules' declarations, compiled in.
const Shapes& declared_shapes();

}  // namespace rocebench::reports
