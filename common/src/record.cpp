#include "rocebench/common/record.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/json_depth.hpp"
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

RecordFile read_records(const std::filesystem::path& file, const JsonSchema* schema) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "", "cannot open results file: " + std::string(std::strerror(errno)));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  RecordFile out;
  std::size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const bool complete = end != std::string::npos;
    const std::string line = text.substr(pos, complete ? end - pos : std::string::npos);
    pos = complete ? end + 1 : text.size();
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;

    if (json_too_deep_at(line) != std::string::npos) {
      out.issues.push_back({line_no, fmt::format("nested deeper than {} levels; ignored", kMaxJsonDepth)});
      continue;
    }
    json record;
    try {
      record = json::parse(line);
    } catch (const json::exception& e) {  // a syntax error, or a number beyond double's range
      if (!complete) {
        out.truncated_tail = true;
        out.issues.push_back({line_no, "last line is cut short (the writer stopped mid-record); ignored"});
      } else {
        out.issues.push_back({line_no, "not a JSON record: " + json_parse_message(e.what())});
      }
      continue;
    }
    if (schema) {
      const auto errors = schema->validate(record);
      if (!errors.empty()) {
        const auto& first = errors.front();
        out.issues.push_back({line_no, "field '" + (first.pointer.empty() ? "/" : first.pointer) + "': " +
                                           first.message + " (record skipped)"});
        continue;
      }
    }
    out.records.push_back(std::move(record));
    out.record_lines.push_back(line_no);
  }
  return out;
}

}  // namespace rocebench
