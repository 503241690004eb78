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
  if (const auto it = ids_.find(text); it != ids_.end()) return it->second;
  const auto id = static_cast<std::uint32_t>(strings_.size());
  strings_.emplace_back(text);
  ids_.emplace(strings_.back(), id);
  return id;
}

std::uint32_t Interner::find(std::string_view text) const {
  const auto it = ids_.find(text);
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

Spread read_spread(const json& samples) {
  Spread s;
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

FlatResult flatten(const json& r) {
  FlatResult f;
  f.run = r["run"].get<std::string>();
  f.step = r["step"].get<std::string>();
  f.host = r["host"].get<std::string>();
  f.rank = r["rank"].get<int>();
  f.world = r["world"].get<int>();
  const json& params = r["params"];
  f.params = params.dump();
  const std::string& status = r["status"].get_ref<const std::string&>();
  for (Status s : {Status::ok, Status::fail, Status::skip, Status::error, Status::warn}) {
    if (status == to_string(s)) f.status = s;
  }
  if (auto it = r.find("reason"); it != r.end()) {
    f.reason = it->get<std::string>();
    f.has_reason = true;
  }
  for (const auto& [name, value] : r["metrics"].items()) f.metrics.emplace_back(name, value.get<double>());
  const json& samples = r["samples"];
  const auto declared = samples.find("metric");
  f.sampled = declared != samples.end() && declared->is_string() ? declared->get<std::string>() : sampled_metric(f.step, params);
  f.samples = read_spread(samples);
  return f;
}

// A parsed line: a result taken apart, another record whole, or why it was skipped. Result
// records are taken apart on the parsing thread, so that their JSON never crosses threads.
struct Parsed {
  std::optional<FlatResult> result;
  json other;
  std::string problem;
};

Parsed parse_line(const Line& line) {
  Parsed out;
  json record;
  try {
    record = json::parse(line.text);
  } catch (const json::parse_error& e) {
    out.problem = line.complete ? std::string("not a JSON record: ") + e.what()
                                : "last line is cut short (the writer stopped mid-record); ignored";
    return out;
  }
  if (!surely_valid(record)) {
    const auto errors = result_schema().validate(record);
    if (!errors.empty()) {
      const auto& first = errors.front();
      out.problem = "field '" + (first.pointer.empty() ? "/" : first.pointer) + "': " + first.message + " (record skipped)";
      return out;
    }
  }
  if (record["kind"] == "result") out.result = flatten(record);
  else out.other = std::move(record);
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

}  // namespace

std::uint32_t Dataset::intern_params(const std::string& text) {
  const auto [it, inserted] = params_ids_.try_emplace(text, static_cast<std::uint32_t>(params.size()));
  if (inserted) params.push_back(json::parse(text));
  return it->second;
}

void Dataset::add(FlatResult&& f, std::uint32_t file, int line) {
  Observation o;
  o.file = file;
  o.line = line;
  o.run = names.id(f.run);
  o.step = names.id(f.step);
  o.host = names.id(f.host);
  o.rank = f.rank;
  o.world = f.world;
  o.params = intern_params(f.params);
  o.status = f.status;
  if (f.has_reason) o.reason = names.id(f.reason);
  o.metrics.reserve(f.metrics.size());
  for (const auto& [name, value] : f.metrics) o.metrics.emplace_back(names.id(name), value);
  o.samples = std::move(f.samples);
  o.samples.of = f.sampled.empty() ? kNoName : names.id(f.sampled);
  results.push_back(std::move(o));
}

void Dataset::load(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path.string(), 0, "", std::string("cannot open results file: ") + std::strerror(errno));
  std::string text(static_cast<std::size_t>(in.tellg()), '\0');
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  results.reserve(results.size() + static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1);
  const auto file = static_cast<std::uint32_t>(files.size());
  files.push_back(path.string());

  constexpr std::size_t kBatch = 1 << 16;  // bounds the memory held as parsed JSON
  std::vector<Line> batch;
  std::size_t kept = 0;
  auto flush = [&] {
    auto parsed = parse_batch(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Parsed& p = parsed[i];
      if (!p.problem.empty()) {
        issues.push_back({path.string(), batch[i].number, p.problem});
        continue;
      }
      ++kept;
      if (p.result) add(std::move(*p.result), file, batch[i].number);
      else if (p.other["kind"] == "run") runs.push_back(std::move(p.other));
      else if (p.other["kind"] == "check") checks.push_back({file, batch[i].number, std::move(p.other)});
      // events describe what happened; there is nothing in them to aggregate
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
