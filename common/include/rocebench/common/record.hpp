#pragma once
// Result records (DESIGN.md "Result records"): builders, an append-only JSONL writer and a
// forgiving reader. The schema itself is common/schema/result.schema.json.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace rocebench {

using json = nlohmann::json;

inline constexpr const char* kRecordSchema = "rocebench.result/1";

// unverified: a check that applies here but whose setting could not be read (DESIGN.md: not a pass).
enum class Status { ok, fail, skip, error, warn, unverified };
const char* to_string(Status s);

// The fields every record carries: schema, run, kind, time.
json record_header(const std::string& kind, const std::string& run_id);

// One measurement (kind "result").
struct ResultRecord {
  std::string step;  // e.g. "collectives.allreduce"
  std::string host;
  int rank = 0;
  int world = 1;
  json params = json::object();   // what identifies the measurement
  json metrics = json::object();  // named numbers, unit in the name: lat_us_p50, busbw_GBps
  json samples = json::object();  // n and the distribution (see to_json(Summary))
  Status status = Status::ok;
  std::string reason;  // why, when status is not ok
};
json to_json(const ResultRecord& r, const std::string& run_id);

// One configuration check (kind "check", netcheck).
struct CheckRecord {
  std::string check;    // stable id, e.g. roce.pfc.enabled_priorities
  std::string host;
  std::string subject;  // device / port / interface
  json expected;
  json observed;
  Status status = Status::ok;  // ok | fail | warn | skip | unverified
  std::string hint;            // the command that fixes it
  std::string reason;
};
json to_json(const CheckRecord& c, const std::string& run_id);

// Something that happened (kind "event"): a rank lost, a step started, a retest.
json event_record(const std::string& run_id, const std::string& event, const std::string& message,
                  json details = json::object());

// Appends one record per line. Each record is written with a single write(2) straight to the
// file (no user-space buffer), so a crash loses at most the record in flight; sync() fsyncs and is
// called at the end of each step.
class RecordWriter {
 public:
  // Creates the file (and refuses with InputError when its folder cannot be written).
  explicit RecordWriter(const std::filesystem::path& file);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void append(const json& record);
  void sync();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
};

// A problem found while reading: the line it is on and what is wrong.
struct ReadIssue {
  int line = 0;
  std::string message;
};

struct RecordFile {
  std::vector<json> records;       // every complete, valid record, in file order
  std::vector<int> record_lines;   // line of each record
  std::vector<ReadIssue> issues;   // lines skipped, with why
  bool truncated_tail = false;     // the last line was cut (a writer died mid-record)
};

class JsonSchema;
// Reads a results.jsonl. Keeps every complete record; a cut last line is reported, not fatal.
// With a schema, records that break it are reported with their line and field, and skipped.
// Throws InputError if it cannot be opened, and for what results_limits.hpp refuses.
RecordFile read_records(const std::filesystem::path& file, const JsonSchema* schema = nullptr);

}  // namespace rocebench
