#include "rocebench/reports/accept_records.hpp"

#include <map>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"

namespace rocebench::reports::accept {

namespace {

// The details of the records accept writes in accept.jsonl (start, stage, end): the one declaration
// the reader checks.
const JsonSchema& details_schema(const std::string& what) {
  static const json defs = json::parse(R"schema({
      "node": {"type": "object", "required": ["name", "host"], "additionalProperties": false,
               "properties": {"name": {"type": "string", "minLength": 1}, "host": {"type": "string", "minLength": 1}}},
      "start": {"type": "object", "required": ["nodes", "profile"], "properties": {
        "quick": {"type": "boolean"},
        "nodes": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
        "profile": {"type": "object", "required": ["file", "document"],
                    "properties": {"file": {"type": "string"}, "document": {"type": "object"}}}}},
      "stage": {"type": "object", "required": ["stage", "label", "folder", "group", "exit_code"], "properties": {
        "stage": {"enum": ["hosts", "links", "lossless", "allreduce", "gpu", "train"]},
        "label": {"type": "string", "minLength": 1},
        "folder": {"type": "string", "pattern": "^stages/[^/]+$"},
        "group": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
        "exit_code": {"type": "integer"},
        "lost": {"type": "string"}}},
      "end": {"type": "object", "required": ["runs"], "properties": {"runs": {"type": "integer", "minimum": 0},
                                                                "elapsed_s": {"type": "number", "minimum": 0}}}
  })schema");
  static const std::map<std::string, JsonSchema> schemas = [] {
    std::map<std::string, JsonSchema> out;
    for (const char* event : {"start", "stage", "end"}) out.emplace(event, JsonSchema({{"$defs", defs}, {"$ref", std::string("#/$defs/") + event}}));
    return out;
  }();
  return schemas.at(what);
}

json nodes_json(const std::vector<Node>& nodes) {
  json out = json::array();
  for (const auto& n : nodes) out.push_back({{"name", n.name}, {"host", n.host}});
  return out;
}

std::vector<Node> nodes_of(const json& j) {
  std::vector<Node> out;
  for (const auto& n : j) out.push_back({n["name"].get<std::string>(), n["host"].get<std::string>()});
  return out;
}

}  // namespace

bool StageRun::completed() const { return exit_code == kExitOk || exit_code == kExitCheckFailed; }

json start_record(const std::string& run, const std::vector<Node>& nodes, const Profile& profile, bool quick) {
  json details = {{"nodes", nodes_json(nodes)}, {"profile", {{"file", profile.file}, {"document", profile.document}}}};
  if (quick) details["quick"] = true;
  return event_record(run, "accept.start",
                      fmt::format("{} of {} node(s) under profile {}", quick ? "quick acceptance" : "acceptance", nodes.size(), profile.file),
                      details);
}

json stage_record(const std::string& run, const StageRun& s) {
  json details = {{"stage", s.stage}, {"label", s.label}, {"folder", s.folder}, {"group", nodes_json(s.group)}, {"exit_code", s.exit_code}};
  if (!s.lost.empty()) details["lost"] = s.lost;
  return event_record(run, "accept.stage",
                      fmt::format("{} on {} node(s): exit {}{}", s.label, s.group.size(), s.exit_code, s.lost.empty() ? "" : "; " + s.lost),
                      details);
}

json end_record(const std::string& run, std::size_t runs, double elapsed_s) {
  return event_record(run, "accept.end", fmt::format("the acceptance ended after {} stage run(s), {:.1f} s", runs, elapsed_s),
                      {{"runs", runs}, {"elapsed_s", elapsed_s}});
}

Acceptance load_acceptance(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  const fs::path file = dir / kAcceptRecords;
  if (!fs::is_regular_file(file)) {
    throw InputError(fmt::format("{}: not an acceptance's folder: it has no {} (rocebench accept writes it)", dir.string(), kAcceptRecords));
  }
  const RecordFile f = read_records(file, &result_schema());
  for (const auto& issue : f.issues) {
    if (!(f.truncated_tail && &issue == &f.issues.back())) throw InputError(file.string(), issue.line, "", issue.message);
  }
  Acceptance a;
  bool started = false;
  for (std::size_t i = 0; i < f.records.size(); ++i) {
    const json& r = f.records[i];
    const int line = f.record_lines[i];
    const std::string event = r.value("event", "");
    if (r.value("kind", "") != "event" || !event.starts_with("accept.")) {
      throw InputError(file.string(), line, "event", "not a record of accept (accept.start, accept.stage, accept.end)");
    }
    const std::string what = event.substr(7);
    if (what != "start" && what != "stage" && what != "end") throw InputError(file.string(), line, "event", "unknown event '" + event + "'");
    if (started == (what == "start")) {
      throw InputError(file.string(), line, "event", started ? "a second accept.start" : "the first record is not accept.start");
    }
    if (a.finished) throw InputError(file.string(), line, "event", "a record after accept.end");
    const json details = r.value("details", json::object());
    const auto errors = details_schema(what).validate(details);
    if (!errors.empty()) throw InputError(file.string(), line, "details" + errors.front().pointer, errors.front().message);
    if (what == "start") {
      started = true;
      a.run = r.value("run", "");
      a.time = r.value("time", "");
      a.nodes = nodes_of(details["nodes"]);
      a.profile_file = details["profile"]["file"].get<std::string>();
      a.profile = details["profile"]["document"];
      a.quick = details.value("quick", false);
    } else if (what == "end") {
      a.finished = true;
      a.elapsed_s = details.value("elapsed_s", 0.0);
    } else {
      StageRun s;
      s.stage = details["stage"].get<std::string>();
      s.label = details["label"].get<std::string>();
      s.folder = details["folder"].get<std::string>();
      s.group = nodes_of(details["group"]);
      s.exit_code = details["exit_code"].get<int>();
      s.lost = details.value("lost", "");
      if (s.folder == "stages/.." || s.folder == "stages/.") throw InputError(file.string(), line, "details/folder", "not a stage's folder");
      const fs::path results = dir / s.folder / "results.jsonl";
      if (fs::exists(results)) s.records = read_records(results).records;  // a run that never started has none
      a.runs.push_back(std::move(s));
    }
  }
  if (!started) throw InputError(file.string(), 0, "", "no accept.start record: not an acceptance's records");
  return a;
}

}  // namespace rocebench::reports::accept
