#include "rocebench/common/record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/json_depth.hpp"
#include "rocebench/common/results_limits.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench {

const char* to_string(Status s) {
  switch (s) {
    case Status::ok: return "ok";
    case Status::fail: return "fail";
    case Status::skip: return "skip";
    case Status::error: return "error";
    case Status::warn: return "warn";
    case Status::unverified: return "unverified";
  }
  return "error";
}

json record_header(const std::string& kind, const std::string& run_id) {
  return {{"schema", kRecordSchema}, {"run", run_id}, {"kind", kind}, {"time", utc_now_rfc3339()}};
}

json to_json(const ResultRecord& r, const std::string& run_id) {
  json j = record_header("result", run_id);
  j["step"] = r.step;
  j["host"] = r.host;
  j["rank"] = r.rank;
  j["world"] = r.world;
  j["params"] = r.params;
  j["metrics"] = r.metrics;
  j["samples"] = r.samples;
  j["status"] = to_string(r.status);
  if (!r.reason.empty()) j["reason"] = r.reason;
  return j;
}

json to_json(const CheckRecord& c, const std::string& run_id) {
  json j = record_header("check", run_id);
  j["check"] = c.check;
  j["host"] = c.host;
  j["subject"] = c.subject;
  j["expected"] = c.expected;
  j["observed"] = c.observed;
  j["status"] = to_string(c.status);
  if (!c.hint.empty()) j["hint"] = c.hint;
  if (!c.reason.empty()) j["reason"] = c.reason;
  return j;
}

json event_record(const std::string& run_id, const std::string& event, const std::string& message, json details) {
  json j = record_header("event", run_id);
  j["event"] = event;
  j["message"] = message;
  j["details"] = std::move(details);
  return j;
}

RecordWriter::RecordWriter(const std::filesystem::path& file) : path_(file) {
  fd_ = ::open(file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw InputError(file.string(), 0, "", std::string("cannot open results file for writing: ") + std::strerror(errno));
  }
}

RecordWriter::~RecordWriter() {
  if (fd_ >= 0) {
    ::fsync(fd_);
    ::close(fd_);
  }
}

void RecordWriter::append(const json& record) {
  // Invalid UTF-8 from a host (a odd hostname, a sysfs string) is replaced, not fatal.
  const std::string line = record.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InfraError(path_.string() + ": write failed: " + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
}

void RecordWriter::sync() {
  if (::fsync(fd_) != 0) throw InfraError(path_.string() + ": fsync failed: " + std::strerror(errno));
}

std::string too_many_bad_lines() {
  return fmt::format("more than {} lines are not valid records: not a results file", kMaxReadIssues);
}

std::string OverlongField::message() const {
  return fmt::format("{} is {} long; a field that names a series is at most {}", key ? "the name" : "the value",
                     byte_size_text(bytes), byte_size_text(kMaxSeriesFieldBytes));
}

namespace {

// A value's length as the history keeps it: a string's text, anything else as JSON.
std::size_t written_size(const json& value) {
  return value.is_string() ? value.get_ref<const std::string&>().size() : value.dump().size();
}

std::optional<OverlongField> overlong_member(const std::string& object, const json& members) {
  if (!members.is_object()) return std::nullopt;
  for (const auto& [name, value] : members.items()) {
    const std::string field = object + "." + printable_excerpt(name, 40);
    if (name.size() > kMaxSeriesFieldBytes) return OverlongField{field, true, name.size()};
    if (object == "params" && written_size(value) > kMaxSeriesFieldBytes) return OverlongField{field, false, written_size(value)};
  }
  return std::nullopt;
}

}  // namespace

std::optional<OverlongField> overlong_params_field(const json& params) { return overlong_member("params", params); }

std::optional<OverlongField> overlong_series_field(const json& record) {
  if (!record.is_object()) return std::nullopt;
  for (const char* name : {"run", "step", "host"}) {
    const auto it = record.find(name);
    if (it != record.end() && it->is_string() && it->get_ref<const std::string&>().size() > kMaxSeriesFieldBytes)
      return OverlongField{name, false, it->get_ref<const std::string&>().size()};
  }
  if (const auto it = record.find("params"); it != record.end())
    if (auto bad = overlong_params_field(*it)) return bad;
  if (const auto it = record.find("metrics"); it != record.end()) return overlong_member("metrics", *it);
  return std::nullopt;
}

RecordFile read_records(const std::filesystem::path& file, const JsonSchema* schema) {
  LineReader lines(file, kResultsLimits);
  RecordFile out;
  const auto issue = [&](const std::string& message) {
    if (out.issues.size() == kMaxReadIssues) throw InputError(lines.name(), lines.number(), "", too_many_bad_lines());
    out.issues.push_back({lines.number(), message});
  };
  for (std::string_view line; lines.next(line);) {
    const int line_no = lines.number();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;

    if (json_too_deep_at(line) != std::string::npos) {
      issue(fmt::format("nested deeper than {} levels; ignored", kMaxJsonDepth));
      continue;
    }
    json record;
    try {
      record = json::parse(line);
    } catch (const json::exception& e) {  // a syntax error, or a number beyond double's range
      if (!lines.complete()) {
        out.truncated_tail = true;
        issue("last line is cut short (the writer stopped mid-record); ignored");
      } else {
        issue("not a JSON record: " + json_parse_message(e.what()));
      }
      continue;
    }
    if (schema) {
      const auto errors = schema->validate(record);
      if (!errors.empty()) {
        const auto& first = errors.front();
        issue("field '" + (first.pointer.empty() ? "/" : first.pointer) + "': " + first.message + " (record skipped)");
        continue;
      }
    }
    if (const auto bad = overlong_series_field(record)) throw InputError(lines.name(), line_no, bad->field, bad->message());
    out.records.push_back(std::move(record));
    out.record_lines.push_back(line_no);
  }
  return out;
}

}  // namespace rocebench
