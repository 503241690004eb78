#pragma once
// What a results.jsonl may hold, as read_records (record.hpp) and the reports' dataset read it:
// the file, a line, the fields that name a series, and the bad lines kept. Each over its limit is
// refused (InputError naming file:line and the field), never read on.
#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "rocebench/common/bounded_read.hpp"

namespace rocebench {

// A million records are ~400 MB; the longest line is a run record of a few thousand hosts (~2 KB
// each) or a record of 10,000 latency samples (~100 KB).
inline constexpr InputLimits kResultsLimits{"results file", 4 * kGiB, 8 * kMiB};

// The fields that name a series (run, step, host, metric names, params keys and values as written)
// are at most this long: a history copies them into every series and point, and reports into
// every table row, so one 50 MB params value grew a history by 420 MB.
inline constexpr std::size_t kMaxSeriesFieldBytes = 1024;

struct OverlongField {
  std::string field;  // "host", "params.model", "metrics.<the name, cut>"
  bool key = false;   // the name itself is too long, not its value
  std::size_t bytes = 0;
  std::string message() const;  // the refusal's words
};
// The first key or value of a params object over the limit.
std::optional<OverlongField> overlong_params_field(const nlohmann::json& params);
// The first field of a record (of any kind) that names a series and is over the limit.
std::optional<OverlongField> overlong_series_field(const nlohmann::json& record);

// More bad lines than this and a file is refused rather than read on: it is not a results file,
// and each bad line would keep a message.
inline constexpr std::size_t kMaxReadIssues = 1000;
std::string too_many_bad_lines();  // the refusal's words

}  // namespace rocebench
