#include "rocebench/reports/dataset.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/results_limits.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/json_depth.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/fast_check.hpp"
#include "rocebench/reports/shapes.hpp"
#include "record_scan.hpp"

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
  const StepShape* shape = declared_shapes().of(step);
  return shape ? shape->sampled_of(params) : "";
}

namespace {

constexpr std::string_view kIncastStep = "microbench.incast";  // its records are kept whole (Dataset::incast)

struct Line {
  std::string_view text;
  int number;
  bool complete;
};

Spread read_spread(const json& samples) {
  Spread s;
  if (auto it = samples.find("n"); it != samples.end() && it->is_number()) {
    // 5.0 counts as 5; beyond 2^53 a double holds no exact count, and beyond 2^64 the conversion is undefined.
    if (const double n = it->get<double>(); n >= 0 && n <= 0x1p53) s.n = static_cast<std::size_t>(n);
  }
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

// A result record that took the general path, as a view into its JSON document.
ResultView view_of(const json& r, const std::string& params_text) {
  ResultView v;
  v.run = r["run"].get_ref<const std::string&>();
  v.step = r["step"].get_ref<const std::string&>();
  v.host = r["host"].get_ref<const std::string&>();
  v.rank = r["rank"].get<int>();
  v.world = r["world"].get<int>();
  v.params = params_text;
  const std::string& status = r["status"].get_ref<const std::string&>();
  for (Status s : {Status::ok, Status::fail, Status::skip, Status::error, Status::warn, Status::unverified}) {
    if (status == to_string(s)) v.status = s;
  }
  if (auto it = r.find("reason"); it != r.end()) {
    v.reason = it->get_ref<const std::string&>();
    v.has_reason = true;
  }
  for (const auto& [name, value] : r["metrics"].items()) v.metrics.emplace_back(name, value.get<double>());
  const json& samples = r["samples"];
  if (const auto declared = samples.find("metric"); declared != samples.end() && declared->is_string()) {
    v.sampled = declared->get_ref<const std::string&>();
  }
  v.samples = read_spread(samples);
  if (const auto pressure = r.find("cpu_pressure_pct"); pressure != r.end() && pressure->is_number()) {
    v.cpu_pressure_pct = pressure->get<double>();
  }
  return v;
}

// A parsed line: a result record's fields, another record whole, or why it was skipped. Most
// result records are read straight from the line (record_scan.hpp); the others are parsed into
// `record`, which the view then points into, so nothing JSON crosses threads twice.
struct Parsed {
  bool is_result = false;
  ResultView result;
  json record;
  std::unique_ptr<std::string> params_text;  // a general-path result's params (a stable address for the view)
  std::string problem;
};

Parsed parse_line(const Line& line) {
  Parsed out;
  if (json_too_deep_at(line.text) != std::string_view::npos) {
    out.problem = fmt::format("nested deeper than {} levels", kMaxJsonDepth);
    return out;
  }
  if (scan_result(line.text, out.result)) {
    out.is_result = true;
    return out;
  }
  out.result = {};
  try {
    out.record = json::parse(line.text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond double's range
    out.problem = line.complete ? "not a JSON record: " + json_parse_message(e.what())
                                : "last line is cut short (the writer stopped mid-record); ignored";
    return out;
  }
  if (!surely_valid(out.record)) {
    const auto errors = result_schema().validate(out.record);
    if (!errors.empty()) {
      const auto& first = errors.front();
      out.problem = "field '" + (first.pointer.empty() ? "/" : first.pointer) + "': " + first.message;
      return out;
    }
  }
  if (out.record["kind"] == "result") {
    out.is_result = true;
    out.params_text = std::make_unique<std::string>(out.record["params"].dump());
    out.result = view_of(out.record, *out.params_text);
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

}  // namespace

namespace {

// A results file mapped read-only: a million records are ~400 MB, and reading them into a string
// costs a zero-fill and a copy. Opened as every input is (bounded_read.hpp): another kind of file, or
// one over kResultsLimits, is refused before it is mapped.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path) : file_(path, kResultsLimits), size_(file_.size()) {
    if (size_ == 0) return;
    void* data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, file_.fd(), 0);
    if (data == MAP_FAILED) throw InputError(path.string(), 0, "", std::string("cannot read results file: ") + std::strerror(errno));
    // Pages are read ahead as the lines are read, not all at once (MAP_POPULATE): a line over the
    // limit is refused having touched no more than the limit's pages.
    ::madvise(data, size_, MADV_SEQUENTIAL);
    data_ = static_cast<const char*>(data);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view text() const { return {data_ ? data_ : "", size_}; }

 private:
  InputFile file_;
  std::size_t size_ = 0;
  const char* data_ = nullptr;
};

// The first field naming a series over kMaxSeriesFieldBytes (results_limits.hpp), from the view: a params
// text within the limit holds no key or value beyond it, so it is parsed only when longer.
std::optional<OverlongField> overlong_field(const ResultView& r) {
  const std::pair<const char*, std::string_view> fields[] = {{"run", r.run}, {"step", r.step}, {"host", r.host}};
  for (const auto& [field, text] : fields) {
    if (text.size() > kMaxSeriesFieldBytes) return OverlongField{field, false, text.size()};
  }
  for (const auto& [name, value] : r.metrics) {
    if (name.size() > kMaxSeriesFieldBytes) return OverlongField{"metrics." + printable_excerpt(name, 40), true, name.size()};
  }
  if (r.params.size() > kMaxSeriesFieldBytes) return overlong_params_field(json::parse(r.params));
  return std::nullopt;
}

}  // namespace

std::uint32_t Dataset::intern_params(std::string_view text) {
  const std::uint32_t as_written = params_texts_.id(text);
  if (as_written < params_of_text_.size()) return params_of_text_[as_written];
  json value = json::parse(text);
  const auto [it, inserted] = params_ids_.try_emplace(value.dump(), static_cast<std::uint32_t>(params.size()));
  if (inserted) params.push_back(std::move(value));
  params_of_text_.push_back(it->second);
  return it->second;
}

std::uint32_t Dataset::default_sampled(std::uint32_t step, std::uint32_t params_id) {
  const auto [it, inserted] = default_sampled_.try_emplace((std::uint64_t{step} << 32) | params_id, kNoName);
  if (inserted) {
    const std::string metric = sampled_metric(names.str(step), params[params_id]);
    if (!metric.empty()) it->second = names.id(metric);
  }
  return it->second;
}

void Dataset::add(ResultView&& r, std::uint32_t file, int line) {
  Observation o;
  o.file = file;
  o.line = line;
  o.run = names.id(r.run);
  o.step = names.id(r.step);
  o.host = names.id(r.host);
  o.rank = r.rank;
  o.world = r.world;
  o.params = intern_params(r.params);
  o.status = r.status;
  if (r.has_reason) o.reason = names.id(r.reason);
  o.metrics.reserve(r.metrics.size());
  for (const auto& [name, value] : r.metrics) o.metrics.emplace_back(names.id(name), value);
  o.samples = std::move(r.samples);
  o.cpu_pressure_pct = static_cast<float>(r.cpu_pressure_pct);
  o.samples.of = r.sampled.empty() ? default_sampled(o.step, o.params) : names.id(r.sampled);
  results.push_back(std::move(o));
}

void Dataset::load(const std::filesystem::path& given) {
  // A run's folder stands for its results.jsonl.
  const std::filesystem::path path = std::filesystem::is_directory(given) ? given / "results.jsonl" : given;
  const MappedFile mapped(path);
  const std::string_view text = mapped.text();
  const auto file = static_cast<std::uint32_t>(files.size());
  files.push_back(path.string());

  constexpr std::size_t kBatch = 1 << 16;  // bounds the memory held as parsed JSON
  std::vector<Line> batch;
  std::size_t kept = 0, bad = 0;
  auto flush = [&] {
    auto parsed = parse_batch(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Parsed& p = parsed[i];
      const int line = batch[i].number;
      if (!p.problem.empty()) {
        if (++bad > kMaxReadIssues) throw InputError(path.string(), line, "", too_many_bad_lines());
        issues.push_back({path.string(), line, p.problem});
        continue;
      }
      const auto overlong = p.is_result ? overlong_field(p.result) : overlong_series_field(p.record);
      if (overlong) throw InputError(path.string(), line, overlong->field, overlong->message());
      ++kept;
      if (p.is_result && p.result.step == kIncastStep) incast.push_back(p.record.is_object() ? p.record : json::parse(batch[i].text));
      if (p.is_result) add(std::move(p.result), file, batch[i].number);
      else if (p.record["kind"] == "run") runs.push_back(std::move(p.record));
      else if (p.record["kind"] == "check") checks.push_back({file, batch[i].number, std::move(p.record)});
      else if (p.record["kind"] == "event") events.push_back(std::move(p.record));
    }
    batch.clear();
  };

  TextLines lines(text, path.string(), kResultsLimits);
  int number = 0;
  for (std::string_view line; lines.next(line);) {
    number = lines.number();
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    batch.push_back({line, number, lines.complete()});
    if (batch.size() == kBatch) flush();
  }
  flush();
  if (kept == 0) {
    throw InputError(path.string(), 0, "",
                     number == 0 ? "the results file is empty" : "the results file holds no valid record");
  }
}

}  // namespace rocebench::reports
