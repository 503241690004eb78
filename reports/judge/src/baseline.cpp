#include "rocebench/reports/baseline.hpp"

#include <fstream>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/located_json.hpp"
#include "embedded.hpp"

namespace rocebench::reports {

namespace {

// A baseline: a few thousand series of a few machine types (~1 MB each), parsed whole.
constexpr InputLimits kBaselineLimits{"baseline", 64 * kMiB};

json to_json(const MetricKey& k, const Evidence& e) {
  json j = {{"step", k.step}, {"params", k.params}, {"world", k.world}, {"metric", k.metric},
            {"median", e.median()}, {"values", e.values}};
  if (!e.samples.empty()) j["samples"] = e.samples;
  if (e.ci) j["median_ci95"] = {e.ci->first, e.ci->second};
  return j;
}

// Throws the first schema error of `doc`, located.
void validate_located(const LocatedJson& doc, const JsonSchema& schema) {
  const auto errors = schema.validate(doc.value);
  if (!errors.empty()) doc.fail(errors.front().pointer, errors.front().message);
}

}  // namespace

bool is_baseline_file(const std::filesystem::path& file) {
  // Another kind of file, or one larger than a baseline, is left to the results reader to refuse.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec) || std::filesystem::file_size(file, ec) > kBaselineLimits.max_bytes) return false;
  const std::string text = read_input(file, kBaselineLimits);
  // results.jsonl starts with a record too, but a baseline names its schema
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return false;
  return text.find(kBaselineSchema) != std::string::npos && text.find("\"machines\"") != std::string::npos;
}

void write_baseline(const std::filesystem::path& file, const std::string& machine, const EvidenceMap& evidence,
                    const std::vector<std::string>& sources) {
  json doc = {{"schema", kBaselineSchema}, {"machines", json::object()}};
  if (std::filesystem::exists(file)) {
    const LocatedJson existing = parse_located(read_input(file, kBaselineLimits), file.string());
    validate_located(existing, baseline_schema());
    doc = existing.value;
  }
  json metrics = json::array();
  for (const auto& [id, entry] : evidence) metrics.push_back(to_json(entry.first, entry.second));
  doc["machines"][machine] = {{"sources", sources}, {"metrics", metrics}};
  write_file_atomically(file, doc.dump(1) + "\n");  // a reader never sees half a baseline
}

EvidenceMap read_baseline(const std::filesystem::path& file, const std::string& machine) {
  const LocatedJson doc = parse_located(read_input(file, kBaselineLimits), file.string());
  validate_located(doc, baseline_schema());
  const json& machines = doc.value["machines"];
  std::string name = machine;
  if (name.empty()) {
    if (machines.size() != 1) doc.fail("/machines", "holds " + std::to_string(machines.size()) + " machine types: choose one with --machine");
    name = machines.begin().key();
  }
  if (!machines.contains(name)) doc.fail("/machines", "has no machine type '" + name + "'");
  EvidenceMap out;
  for (const auto& m : machines[name]["metrics"]) {
    MetricKey key{m["step"], m["params"], m["world"].get<int>(), m["metric"]};
    Evidence e;
    e.values = m["values"].get<std::vector<double>>();
    if (m.contains("samples")) e.samples = m["samples"].get<std::vector<double>>();
    if (m.contains("median_ci95")) e.ci = std::make_pair(m["median_ci95"][0].get<double>(), m["median_ci95"][1].get<double>());
    const std::string id = key.id();
    out[id] = {std::move(key), std::move(e)};
  }
  return out;
}

}  // namespace rocebench::reports
