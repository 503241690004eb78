#pragma once
// A throughput that a step kind's shape.json declares as the inverse of its sampled time, written
// there once instead of by hand wherever a step time becomes a rate:
//   "images_per_s": {…, "samples": "inverse of sampled", "count": ["batch", "ranks"]}
// says that one sample of the step's sampled metric (a step time, in its declared unit) carries
// batch × ranks images, so images/s = batch × ranks / the step time in seconds. A param the record
// lacks counts 1 (a rank training alone records no ranks). The step that records the metric and
// the report that reads it both compute it from the declaration.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rocebench {

// How many of a unit of time ("s", "ms", "us", "ns") make a second: 1e3 for ms; nullopt for any
// other unit.
std::optional<double> units_per_second(std::string_view unit);

struct DeclaredRate {
  std::vector<std::string> count;  // the params whose product one sample carries
  double units_per_second = 1;     // of the sampled metric: 1e3 for a time in ms

  // What one sample carries by these params.
  double count_of(const nlohmann::json& params) const;
  // Whether the params give every count a positive number (none counts 1 for want of it).
  bool counted_by(const nlohmann::json& params) const;
  // The rate of one sample (a time in the sampled metric's unit): count_of(params) / its seconds,
  // as count × units_per_second / sample (batch × ranks × 1e3 / step ms).
  double of(const nlohmann::json& params, double sample) const;
};

// The rate that `metric` declares in one step declaration of a shape.json (an element of its
// array). Throws InputError, naming the metric, when it declares none: no "count", no sampled
// metric, or a sampled metric whose unit is not a time.
DeclaredRate declared_rate(const nlohmann::json& step_declaration, std::string_view metric);

}  // namespace rocebench
