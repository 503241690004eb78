// nccl-tests (NVIDIA/nccl-tests) results. The text table (src/common.cu, src/util.cu):
//   # nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 ...
//   #  Rank  0 Group  0 Pid  41211 on     node01 device  0 [0x07] NVIDIA H100 80GB HBM3
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//             8             2     float     sum      -1    25.61    0.00    0.00      0    25.12    0.00    0.00      0
//   # Out of bounds values : 0 OK
//   # Avg bus bandwidth    : 48.5731
// with out-of-place then in-place columns ("#wrong" is "N/A" without -c). Older versions differ, and
// columns are found by name in the header, which may lack its '#':
//   2019-2022  no root column (allreduce), no redop column (broadcast), neither (allgather); "error"
//              (the largest difference from the expected result) instead of "#wrong";
//              "#   Rank  0 Pid  1234 on node01 device ..."
//   2017       "bytes N type op time algbw busbw res", time in milliseconds; "#   Rank  0 on node01 ..."
//   -Z         a "timestamp" column: a date and a time at the end of each row
//   trace      an out-of-place half left blank (in-place only)
// -J FILE writes the same as JSON: {"config": {..., "devices": [...]}, "results": [{"size", "count", "type",
// "redop", "root", "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}],
// "out_of_bounds": {"count", "okay"}, "errors": [...]}.
#include <algorithm>
#include <cmath>
#include <set>
#include <type_traits>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

// nccl-tests' own failure messages (common.h's NCCLCHECK / CUDACHECK, util.cu's writeErrors).
constexpr std::string_view kErrorMarkers[] = {"Test NCCL failure", "Test CUDA failure", "Test failure", "# error:"};

// "all_reduce_perf" / "./build/all_reduce_perf_mpi" -> "allreduce".
std::string op_from_program(std::string program) {
  program = program.substr(program.find_last_of('/') + 1);
  const auto perf = program.find("_perf");
  if (perf == std::string::npos) return "";
  program = program.substr(0, perf);
  if (program == "all_reduce") return "allreduce";
  if (program == "all_gather") return "allgather";
  return program;  // reduce_scatter, broadcast, alltoall, reduce, sendrecv, gather, scatter, hypercube
}

std::string resolve_op(const ImportOptions& o, const std::string& found, const std::string& file) {
  if (!o.op.empty()) return o.op;
  if (!found.empty()) return found;
  const std::string stem = std::filesystem::path(file).stem().string();
  for (const char* known : {"reduce_scatter", "all_reduce", "allreduce", "all_gather", "allgather", "broadcast", "alltoall"}) {
    if (stem.find(known) != std::string::npos) return op_from_program(std::string(known) + "_perf");
  }
  throw InputError(file, 0, "", "the output does not name its collective: pass --op (e.g. allreduce)");
}

// What every record of the file shares.
struct Run {
  std::string op, host;
  int world = 0;  // 0: the output does not say
  long long iters = 0;
};

// The fields of a row before its halves.
struct Prefix {
  double bytes = 0;
  std::string type, redop, root;
};

// One half of a row: out-of-place or in-place.
struct Half {
  double time = 0, algbw = 0, busbw = 0;
  std::optional<double> wrong;      // "#wrong": elements that differ from the expected result
  std::optional<double> max_error;  // older versions' "error": the largest difference from it
};

ResultRecord collective(const Run& run, const Prefix& p, bool inplace, const Half& h) {
  ResultRecord r;
  r.step = "collectives." + run.op;
  r.host = run.host;
  r.world = run.world;
  // Versions without a redop column (allgather, broadcast) print what newer ones print there,
  // "none", so old and new runs of one collective are one series.
  r.params = {{"algorithm", "nccl"}, {"transport", "nccl"}, {"bytes", as_count(p.bytes)}, {"dtype", p.type},
              {"inplace", inplace},  {"redop", p.redop.empty() ? "none" : p.redop}};
  if (run.world < 1) mark_ranks_unknown(r);
  const auto root = to_number(trim(p.root));
  if (root && *root >= 0 && *root < (1 << 24) && *root == std::floor(*root)) r.params["root"] = as_count(*root);  // a rank
  r.metrics = {{"time_us", h.time}, {"algbw_GBps", h.algbw}, {"busbw_GBps", h.busbw}};
  if (h.wrong) r.metrics["wrong"] = *h.wrong;
  if (h.max_error) r.metrics["max_error"] = *h.max_error;
  r.samples = json::object();
  if (run.iters > 0) r.samples = {{"n", run.iters}, {"avg", h.time}};  // nccl-tests reports the mean of its iterations
  if (h.wrong && *h.wrong > 0) {
    r.status = Status::fail;
    r.reason = number(*h.wrong) + " wrong elements (nccl-tests #wrong)";
  }
  return r;
}

using AddHalf = std::function<void(const Prefix&, bool inplace, const Half&)>;

// The table's columns, found by name in its header line.
class Layout {
 public:
  static std::optional<Layout> of(const std::string& line) {
    auto t = split_ws(line);
    if (!t.empty() && t[0] == "#") t.erase(t.begin());
    if (t.size() < 3 || (t[0] != "size" && t[0] != "bytes") || (t[1] != "count" && t[1] != "N")) return std::nullopt;
    Layout l;
    l.names_ = std::move(t);
    for (std::size_t i = 0; i < l.names_.size() && l.halves_.size() < 2; ++i) {
      if (l.names_[i] == "time" || l.names_[i] == "cputime") l.halves_.push_back(i);
    }
    if (l.halves_.empty()) return std::nullopt;
    l.timestamp_ = l.names_.back() == "timestamp";
    const std::size_t end = l.names_.size() - (l.timestamp_ ? 1 : 0);
    l.width_ = (l.halves_.size() > 1 ? l.halves_[1] : end) - l.halves_[0];
    l.time_to_us_ = l.names_[0] == "bytes" ? 1000 : 1;  // 2017's header: milliseconds
    return l;
  }

  // Reads a row and hands each of its halves to `add`.
  void read(const std::string& file, int number, const std::string& line, const AddHalf& add) const {
    auto tokens = split_ws(line);
    const std::size_t full = names_.size() + (timestamp_ ? 1 : 0);  // a timestamp is a date and a time
    // Trace replay prints 32 blanks for the out-of-place half; a row cut short has no such gap.
    const bool in_place_only = halves_.size() == 2 && tokens.size() + width_ == full && line.find(std::string(32, ' ')) != std::string::npos;
    if (tokens.size() != full && !in_place_only) {
      throw RowError(file, number, "", "the row has " + std::to_string(tokens.size()) + " values where the header has " +
                                           std::to_string(full) + ": cut short, or run into the next line");
    }
    const Cells cells{*this, file, number, std::move(tokens), in_place_only};
    const Prefix p = prefix(cells);
    for (std::size_t k = in_place_only ? 1 : 0; k < halves_.size(); ++k) add(p, k == 1, half(cells, halves_[k]));
  }

 private:
  // A row's tokens by column: past a blank out-of-place half, the in-place ones come `width_` earlier.
  struct Cells {
    const Layout& l;
    const std::string& file;
    int number;
    std::vector<std::string> tokens;
    bool in_place_only;
    const std::string& token(std::size_t column) const {
      return tokens[in_place_only && column >= l.halves_[0] ? column - l.width_ : column];
    }
    double value(std::size_t column, Bound bound) const { return row_number(file, number, l.names_[column], token(column), bound); }
    // A word (type, redop): a number there means the row's columns slid.
    std::string word(std::size_t column) const {
      if (to_number(token(column))) throw RowError(file, number, "", "column '" + l.names_[column] + "': '" + token(column) + "' is a number where a name belongs");
      return token(column);
    }
  };

  Prefix prefix(const Cells& c) const {
    Prefix p;
    p.bytes = c.value(0, Bound::whole);
    c.value(1, Bound::whole);  // count
    if (const auto at = find("type", "", 0, halves_[0])) p.type = c.word(*at);
    if (const auto at = find("redop", "op", 0, halves_[0])) p.redop = c.word(*at);
    if (const auto at = find("root", "", 0, halves_[0])) {
      const double root = c.value(*at, Bound::any);
      if (root < -1 || root != std::floor(root)) throw RowError(c.file, c.number, "", "column 'root': '" + c.token(*at) + "' is not a rank");
      p.root = c.token(*at);
    }
    return p;
  }

  Half half(const Cells& c, std::size_t start) const {
    const std::size_t end = start + width_;
    Half h;
    h.time = c.value(start, Bound::non_negative) * time_to_us_;
    if (const auto at = find("algbw", "", start, end)) h.algbw = c.value(*at, Bound::non_negative);
    if (const auto at = find("busbw", "", start, end)) h.busbw = c.value(*at, Bound::non_negative);
    if (const auto at = find("#wrong", "", start, end); at && c.token(*at) != "N/A") h.wrong = c.value(*at, Bound::whole);
    if (const auto at = find("error", "res", start, end); at && c.token(*at) != "N/A") {
      const double error = c.value(*at, Bound::any);
      if (error >= 0) h.max_error = error;  // 2017's version printed -1 when it did not check
    }
    return h;
  }

  std::optional<std::size_t> find(std::string_view a, std::string_view b, std::size_t from, std::size_t to) const {
    for (std::size_t i = from; i < std::min(to, names_.size()); ++i) {
      if (names_[i] == a || (!b.empty() && names_[i] == b)) return i;
    }
    return std::nullopt;
  }

  std::vector<std::string> names_;
  std::vector<std::size_t> halves_;  // the time column of each half: out-of-place, in-place
  std::size_t width_ = 0;            // columns of a half
  bool timestamp_ = false;           // -Z
  double time_to_us_ = 1;
};

// The host of a rank line: the word after "on" ("#  Rank  0 Group  0 Pid  41211 on node01 device 0 ...").
std::string host_of_rank_line(const std::vector<std::string>& t) {
  const auto on = std::find(t.begin(), t.end(), "on");
  return on != t.end() && on + 1 != t.end() ? *(on + 1) : "";
}

Imported parse_text(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  Run run;
  std::string op;
  std::set<int> ranks;
  std::optional<Layout> layout;
  struct Row {
    Prefix p;
    bool inplace;
    Half h;
  };
  std::vector<Row> rows;  // records wait for the collective's name, which may come from the file name
  std::vector<std::string> failures;
  for (const auto& numbered : numbered_lines(text)) {
    const int number = numbered.first;  // plain names: clang 14 cannot capture structured bindings
    const std::string& line = numbered.second;
    const auto t = split_ws(line);
    const std::size_t at = !t.empty() && t[0] == "#" ? 1 : 0;  // header and comment lines may lack their '#'
    const std::string word = t.size() > at ? t[at] : "";
    if (auto l = Layout::of(line)) {
      layout = std::move(l);
    } else if (const auto starting = line.find("Collective test starting:"); starting != std::string::npos) {
      op = op_from_program(trim(line.substr(starting + 25)));
    } else if (word == "Rank" && t.size() > at + 1) {
      const auto rank = to_number(t[at + 1]);
      if (!rank || *rank < 0 || *rank >= (1 << 24) || *rank != static_cast<int>(*rank)) {
        throw InputError(file, number, "Rank", "'" + printable_excerpt(t[at + 1]) + "' is not a rank number");
      }
      ranks.insert(static_cast<int>(*rank));
      if (run.host.empty()) run.host = host_of_rank_line(t);
    } else if (word == "nThread") {
      // "... warmup iters: 5 iters: 20 agg iters: 1 ...": the timed iterations are the bare "iters:".
      for (std::size_t i = 1; i + 1 < t.size(); ++i) {
        if (t[i] == "iters:" && t[i - 1] != "warmup" && t[i - 1] != "agg") run.iters = as_count(to_number(t[i + 1]).value_or(0));
      }
    } else if (line.find("Avg bus bandwidth") != std::string::npos) {
      const auto words = split_ws(line.substr(line.find(':') + 1));
      out.details["avg_busbw_GBps"] = words.empty() ? 0 : to_number(words[0]).value_or(0);
      if (line.find("FAILED") != std::string::npos) failures.push_back(located_message(file, number, "", trim(line)));
    } else if (line.find("Out of bounds values") != std::string::npos) {
      const auto words = split_ws(line.substr(line.find(':') + 1));
      out.details["out_of_bounds"] = words.empty() ? 0 : to_number(words[0]).value_or(0);
      if (line.find("FAILED") != std::string::npos) failures.push_back(located_message(file, number, "", trim(line)));
    } else if (const std::string failure = failure_in(line, kErrorMarkers); !failure.empty()) {
      failures.push_back(located_message(file, number, "", failure));
    } else if (layout && at == 0 && !t.empty() && to_number(t[0])) {
      read_row(out, o, [&] {
        layout->read(file, number, line, [&](const Prefix& p, bool inplace, const Half& h) { rows.push_back({p, inplace, h}); });
      });
    }
  }
  if (rows.empty()) {
    if (!failures.empty()) throw InputError("no nccl-tests results: the run failed: " + failures.front());
    return out;
  }
  run.op = resolve_op(o, op, file);
  run.world = o.world > 0 ? o.world : static_cast<int>(ranks.size());
  if (!o.host.empty() || run.host.empty()) run.host = o.host.empty() ? "imported" : o.host;
  if (run.world < 1) out.details["ranks"] = "unknown";
  for (const auto& row : rows) out.results.push_back(collective(run, row.p, row.inplace, row.h));
  for (const auto& why : failures) mark_failed(out.results, 0, why);
  return out;
}

// One entry of -J's "results": its out-of-place and in-place halves.
void read_json_row(const std::string& file, std::size_t i, const json& r, const AddHalf& add) {
  const std::string at = "results[" + std::to_string(i) + "]";
  auto num = [&](const json& j, const std::string& path, const char* key, Bound bound) -> std::optional<double> {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null()) return std::nullopt;
    return row_number(file, 0, path + "." + key, it->dump(), bound);
  };
  if (!r.is_object()) throw RowError(file, 0, at, "not an object");
  Prefix p;
  const auto bytes = num(r, at, "size", Bound::whole);
  if (!bytes) throw RowError(file, 0, at + ".size", "missing");
  p.bytes = *bytes;
  auto text = [&](const char* key) { return r.contains(key) && r[key].is_string() ? r[key].get<std::string>() : ""; };
  p.type = text("type");
  p.redop = text("redop");
  p.root = text("root");
  for (const char* half : {"out_of_place", "in_place"}) {
    const auto it = r.find(half);
    if (it == r.end() || !it->is_object()) continue;  // null: trace replay leaves out-of-place out
    const std::string path = at + "." + half;
    const auto time = it->contains("time") ? num(*it, path, "time", Bound::non_negative) : num(*it, path, "cpu_time", Bound::non_negative);
    if (!time) continue;
    Half h;
    h.time = *time;
    h.algbw = num(*it, path, "alg_bw", Bound::non_negative).value_or(0);
    h.busbw = num(*it, path, "bus_bw", Bound::non_negative).value_or(0);
    h.wrong = num(*it, path, "nwrong", Bound::whole);
    add(p, std::string_view(half) == "in_place", h);
  }
}

// A field of -J's output, or `fallback` when it is absent or of another type.
template <class T>
T field(const json& j, const char* key, const T& fallback) {
  const auto it = j.is_object() ? j.find(key) : j.end();
  if (it == j.end()) return fallback;
  if constexpr (std::is_same_v<T, json>) return it->type() == fallback.type() ? *it : fallback;
  else if constexpr (std::is_same_v<T, double>) return it->is_number() ? it->template get<double>() : fallback;
  else return it->is_string() ? it->template get<std::string>() : fallback;
}

Imported parse_json(const std::string& text, const std::string& file, const ImportOptions& o) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // a syntax error, or a number beyond double's range
    throw InputError(file, 0, "", "not nccl-tests JSON: " + json_parse_message(e.what()));
  }
  if (!doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    throw InputError(file, 0, "results", "nccl-tests JSON without a results list");
  }
  Imported out;
  Run run;
  std::string op;
  if (doc.contains("args") && doc["args"].is_array() && !doc["args"].empty() && doc["args"][0].is_string()) {
    op = op_from_program(doc["args"][0].get<std::string>());
  }
  run.op = resolve_op(o, op, file);
  const json config = field(doc, "config", json::object());
  const json devices = field(config, "devices", json::array());
  run.world = o.world > 0 ? o.world : static_cast<int>(devices.size());
  run.host = o.host;
  if (run.host.empty()) run.host = devices.empty() ? "imported" : field(devices[0], "hostname", std::string("imported"));
  if (run.world < 1) out.details["ranks"] = "unknown";
  run.iters = as_count(field(config, "iterations", 0.0));
  if (doc.contains("average_bus_bandwidth")) out.details["avg_busbw_GBps"] = field(doc["average_bus_bandwidth"], "bandwidth", 0.0);
  for (std::size_t i = 0; i < doc["results"].size(); ++i) {
    read_row(out, o, [&] {
      read_json_row(file, i, doc["results"][i], [&](const Prefix& p, bool inplace, const Half& h) {
        out.results.push_back(collective(run, p, inplace, h));
      });
    });
  }
  if (const double bounds = field(field(doc, "out_of_bounds", json::object()), "count", 0.0); bounds > 0) {
    mark_failed(out.results, 0, located_message(file, 0, "out_of_bounds.count", number(bounds) + " values out of bounds"));
  }
  for (const auto& error : field(doc, "errors", json::array())) {
    if (error.is_string() && !trim(error.get<std::string>()).empty()) {
      mark_failed(out.results, 0, located_message(file, 0, "errors", printable_excerpt(error.get<std::string>(), 200)));
    }
  }
  return out;
}

}  // namespace

Imported parse_nccl_tests(const std::string& text, const std::string& file, const ImportOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' ? parse_json(text, file, options) : parse_text(text, file, options);
}

}  // namespace rocebench::reports
