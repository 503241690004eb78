#pragma once
// Reads a result record straight from its JSON text, proving on the way that it meets
// result.schema.json, without building a JSON document: a document costs ten allocations and
// ~10 µs a record, which dominated loading a million records. Like surely_valid() it is
// conservative: false means "not proven" (another kind of record, an escaped string, a repeated key,
// an unusual shape), and the caller then takes the general path (nlohmann::json + the validator),
// which also gives the located message when the record is bad.
#include <string_view>
#include <utility>
#include <vector>

#include "rocebench/reports/dataset.hpp"

namespace rocebench::reports {

// A result record's fields. The strings point into the text the record was read from.
struct ResultView {
  std::string_view run, step, host, params, reason;  // params: the object's JSON text
  bool has_reason = false;
  int rank = 0, world = 1;
  Status status = Status::ok;
  std::vector<std::pair<std::string_view, double>> metrics;  // sorted by name, as a JSON object holds them
  std::string_view sampled;  // samples.metric, when the record names it
  Spread samples;
  double cpu_pressure_pct = -1;  // -1: not recorded
};

// Fills `out` and returns true when `line` is a result record that surely meets the schema.
bool scan_result(std::string_view line, ResultView& out);

}  // namespace rocebench::reports
