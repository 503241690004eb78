#include "rocebench/reports/dataset.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/fast_check.hpp"

namespace rocebench::reports {

std::uint32_t Interner::id(std::string_view text) {
  const std::string key(text);
  const auto [it, inserted] = ids_.try_emplace(key, static_cast<std::uint32_t>(strings_.size()));
  if (inserted) strings_.push_back(key);
  return it->second;
}

std::uint32_t Interner::find(std::string_view text) const {
  const auto it = ids_.find(std::string(text));
  return it == ids_.end() ? kNoName : it->second;
}

std::optional<double> Observation::metric(std::uint32_t name) const {
  for (const auto& [id, value] : metrics) {
    if (id == name) return value;
  }
  return std::nullopt;
}

std::string LoadIssue::text() const { return located_message(file, line, "", message); }

std::string param_text(const json& params, const std::string& key) {
  const auto it = params.find(key);
  if (it == params.end()) return "";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string sampled_metric(std::string_view step, const json& params) {
  if (step.starts_with("collectives.")) return "time_us";
  if (step == "models.train") return "step_time_ms_p50";
  if (step == "microbench.probe" && param_text(params, "test").find("lat") != std::string::npos) return "lat_us_p50";
  return "";
}

namespace {

struct Line {
  std::string_view text;
  int number;
  bool complete;
};

// A parsed line: the record, or why it was skipped.
struct Parsed {
  json record;
  std::string problem;
};

Parsed parse_line(const Line& line) {
  Parsed out;
  try {
    out.record = json::parse(line.text);
  } catch (const json::parse_error& e) {
    out.problem = line.complete ? std::string("not a JSON record: ") + e.what()
                                : "last line is cut short (the writer stopped mid-record); ignored";
    return out;
  }
  if (surely_valid(out.record)) return out;
  const auto errors = result_schema().validate(out.record);
  if (!errors.empty()) {
    const auto& first = errors.front();
    out.problem = "field '" + (first.pointer.empty() ? "/" : first.pointer) + "': " + first.message + " (record skipped)";
    out.record = json();
  }
  return out;
}

// Parses a batch of lines on all cores; the order of the results is the order of the lines.
std::vector<Parsed> parse_batch(const std::vector<Line>& lines) {
  std::vector<Parsed> out(lines.size());
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 8);
  const std::size_t per = (lines.size() + workers - 1) / workers;
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers && w * per < lines.size(); ++w) {
    threads.emplace_back([&, w] {
      for (std::size_t i = w * per; i < std::min(lines.size(), (w + 1) * per); ++i) out[i] = parse_line(lines[i]);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

Spread read_spread(const json& samples, std::uint32_t of) {
  Spread s;
  s.of = of;
  if (auto it = samples.find("n"); it != samples.end() && it->is_number()) s.n = it->get<std::size_t>();
  if (auto it = samples.find("median"); it != samples.end() && it->is_number()) s.median = it->get<double>();
  if (auto it = samples.find("median_ci95"); it != samples.end() && it->is_array() && it->size() == 2 &&
                                             (*it)[0].is_number() && (*it)[1].is_number()) {
    s.ci_low = (*it)[0].get<double>();
    s.ci_high = (*it)[1].get<double>();
    s.has_ci = true;
  }
  if (auto it = samples.find("values"); it != samples.end() && it->is_array()) {
    for (const auto& v : *it) {
      if (v.is_number()) s.values.push_back(v.get<double>());
    }
    if (s.n == 0) s.n = s.values.size();
  }
  return s;
}

}  // namespace

std::uint32_t Dataset::intern_params(const json& p) {
  const auto [it, inserted] = params_ids_.try_emplace(p.dump(), static_cast<std::uint32_t>(params.size()));
  if (inserted) params.push_back(p);
  return it->second;
}

void Dataset::add(json&& record, std::uint32_t file, int line) {
  const std::string& kind = record["kind"].get_ref<const std::string&>();
  if (kind == "run") {
    runs.push_back(std::move(record));
    return;
  }
  if (kind == "check") {
    checks.push_back({file, line, std::move(record)});
    return;
  }
  if (kind != "result") return;  // events describe what happened; nothing to aggregate

  Observation o;
  o.file = file;
  o.line = line;
  o.run = names.id(record["run"].get_ref<const std::string&>());
  const std::string& step = record["step"].get_ref<const std::string&>();
  o.step = names.id(step);
  o.host = names.id(record["host"].get_ref<const std::string&>());
  o.rank = record["rank"].get<int>();
  o.world = record["world"].get<int>();
  const json& p = record["params"];
  o.params = intern_params(p);
  o.status = Status::ok;
  const std::string& status = record["status"].get_ref<const std::string&>();
  for (Status s : {Status::ok, Status::fail, Status::skip, Status::error, Status::warn}) {
    if (status == to_string(s)) o.status = s;
  }
  if (auto it = record.find("reason"); it != record.end()) o.reason = names.id(it->get_ref<const std::string&>());
  for (const auto& [name, value] : record["metrics"].items()) o.metrics.emplace_back(names.id(name), value.get<double>());
  const json& samples = record["samples"];
  const auto declared = samples.find("metric");
  const std::string of = declared != samples.end() && declared->is_string() ? declared->get<std::string>()
                                                                           : sampled_metric(step, p);
  o.samples = read_spread(samples, of.empty() ? kNoName : names.id(of));
  results.push_back(std::move(o));
}

void Dataset::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string(), 0, "", std::string("cannot open results file: ") + std::strerror(errno));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto file = static_cast<std::uint32_t>(files.size());
  files.push_back(path.string());

  constexpr std::size_t kBatch = 1 << 16;  // bounds the memory held as parsed JSON
  std::vector<Line> batch;
  std::size_t kept = 0;
  auto flush = [&] {
    auto parsed = parse_batch(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!parsed[i].problem.empty()) {
        issues.push_back({path.string(), batch[i].number, parsed[i].problem});
      } else {
        add(std::move(parsed[i].record), file, batch[i].number);
        ++kept;
      }
    }
    batch.clear();
  };

  std::size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    const bool complete = end != std::string::npos;
    const std::string_view line(text.data() + pos, (complete ? end : text.size()) - pos);
    pos = complete ? end + 1 : text.size();
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    batch.push_back({line, number, complete});
    if (batch.size() == kBatch) flush();
  }
  flush();
  if (kept == 0) {
    throw InputError(path.string(), 0, "",
                     number == 0 ? "the results file is empty" : "the results file holds no valid record");
  }
}

}  // namespace rocebench::reports
