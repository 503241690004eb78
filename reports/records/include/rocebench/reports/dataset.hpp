#pragma once
// Result records from one or many results.jsonl files, held compactly enough for millions of
// records: strings that repeat (steps, hosts, metric names, params) are stored once.
#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports {

inline constexpr std::uint32_t kNoName = std::numeric_limits<std::uint32_t>::max();

class Interner {
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

 public:
  std::uint32_t id(std::string_view text);
  // kNoName when the text was never interned.
  std::uint32_t find(std::string_view text) const;
  const std::string& str(std::uint32_t id) const { return strings_[id]; }

 private:
  std::unordered_map<std::string, std::uint32_t, Hash, std::equal_to<>> ids_;
  std::vector<std::string> strings_;
};

// What a record tells about the distribution behind one of its metrics (`of`).
struct Spread {
  std::uint32_t of = kNoName;  // the metric the samples describe
  std::size_t n = 0;
  double median = 0, ci_low = 0, ci_high = 0;
  bool has_ci = false;
  std::vector<double> values;  // raw samples, when the record kept them
};

struct Observation {
  std::uint32_t file = 0;
  int line = 0;
  std::uint32_t run = 0, step = 0, host = 0, params = 0, reason = kNoName;
  int rank = 0, world = 1;
  Status status = Status::ok;
  std::vector<std::pair<std::uint32_t, double>> metrics;
  Spread samples;
  float cpu_pressure_pct = -1;  // share of the step's time some task of the machine waited for a CPU; -1: not recorded

  std::optional<double> metric(std::uint32_t name) const;
};

struct CheckObservation {
  std::uint32_t file = 0;
  int line = 0;
  json record;
};

struct ResultView;  // record_scan.hpp

struct LoadIssue {
  std::string file;
  int line = 0;
  std::string message;
  std::string text() const;  // "file:line: message"
};

class Dataset {
 public:
  // Appends the records of one results.jsonl, or of the one in a run folder. Records that break the
  // schema become issues and are skipped; a missing file, or one without a single valid record,
  // throws InputError.
  void load(const std::filesystem::path& file);

  Interner names;                          // steps, hosts, metrics, runs, reasons, param values
  std::vector<json> params;                // distinct params objects, by Observation::params
  std::vector<Observation> results;        // kind "result", in file order
  std::vector<CheckObservation> checks;    // kind "check"
  std::vector<json> runs;                  // kind "run"
  std::vector<json> events;                // kind "event": a rank lost, a run interrupted (nothing to aggregate)
  std::vector<json> incast;                // microbench.incast results, whole: the lossless verdict reads their samples
  std::vector<std::string> files;          // by Observation::file
  std::vector<LoadIssue> issues;

  const json& params_of(const Observation& o) const { return params[o.params]; }
  // Interned name, or kNoName when no record used it.
  std::uint32_t name_id(std::string_view name) const { return names.find(name); }

 private:
  void add(ResultView&& result, std::uint32_t file, int line);
  std::uint32_t intern_params(std::string_view text);
  std::uint32_t default_sampled(std::uint32_t step, std::uint32_t params);
  Interner params_texts_;                        // params as written, which may differ in spacing and order
  std::vector<std::uint32_t> params_of_text_;    // -> index into params
  std::unordered_map<std::string, std::uint32_t> params_ids_;  // canonical text -> index into params
  std::unordered_map<std::uint64_t, std::uint32_t> default_sampled_;  // (step, params) -> metric name
};

// The metric a record's samples describe when the record does not say (samples.metric), as its
// step kind declares it (shapes.hpp); "" when the step kind declares none.
std::string sampled_metric(std::string_view step, const json& params);

// A param value as text for keys and tables: strings bare, numbers and booleans as JSON.
std::string param_text(const json& params, const std::string& key);

}  // namespace rocebench::reports
