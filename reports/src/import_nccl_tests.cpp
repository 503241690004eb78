// nccl-tests (NVIDIA/nccl-tests) results. The text table (src/common.cu, src/util.cu):
//   # nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5 iters: 20 ...
//   #  Rank  0 Group  0 Pid  41211 on     node01 device  0 [0x07] NVIDIA H100 80GB HBM3
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
//             8             2     float     sum      -1    25.61    0.00    0.00      0    25.12    0.00    0.00      0
//   # Avg bus bandwidth    : 48.5731
// with out-of-place then in-place columns ("#wrong" is "N/A" without -c; old versions call it "error").
// -J FILE writes the same as JSON: {"config": {..., "devices": [...]}, "results": [{"size", "count", "type",
// "redop", "root", "out_of_place": {"time", "alg_bw", "bus_bw", "nwrong"}, "in_place": {...}}], ...}.
#include <set>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

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

struct Half {
  std::optional<double> time, algbw, busbw, wrong;
};

ResultRecord collective(const std::string& op, const std::string& host, int world, double bytes, const std::string& type,
                        const std::string& redop, const std::string& root, bool inplace, const Half& h, long long iters) {
  ResultRecord r;
  r.step = "collectives." + op;
  r.host = host;
  r.world = world;
  r.params = {{"algorithm", "nccl"}, {"transport", "nccl"}, {"bytes", bytes}, {"dtype", type},
              {"inplace", inplace},  {"redop", redop}};
  if (const auto root_value = to_number(trim(root)); root_value && *root_value >= 0) r.params["root"] = *root_value;
  r.metrics = {{"time_us", *h.time}, {"algbw_GBps", h.algbw.value_or(0)}, {"busbw_GBps", h.busbw.value_or(0)}};
  if (h.wrong) r.metrics["wrong"] = *h.wrong;
  r.samples = json::object();
  if (iters > 0) r.samples = {{"n", iters}, {"avg", *h.time}};  // nccl-tests reports the mean of its iterations
  return r;
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

Imported parse_text(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  std::string op, first_host;
  std::set<int> ranks;
  long long iters = 0;
  std::vector<std::string> columns;
  struct Row {
    int line;
    std::vector<std::string> tokens;
  };
  std::vector<Row> rows;
  for (const auto& [number, line] : numbered_lines(text)) {
    if (const auto at = line.find("Collective test starting:"); at != std::string::npos) {
      op = op_from_program(trim(line.substr(at + 25)));
    } else if (line.rfind("#  Rank", 0) == 0 || line.rfind("#   Rank", 0) == 0) {
      const auto t = split_ws(line);  // # Rank N Group G Pid P on HOST device D ...
      if (t.size() > 8 && t[1] == "Rank") {
        const auto rank = to_number(t[2]);
        if (!rank || *rank < 0 || *rank >= (1 << 24) || *rank != static_cast<int>(*rank)) {
          throw InputError(file, number, "Rank", "'" + printable_excerpt(t[2]) + "' is not a rank number");
        }
        ranks.insert(static_cast<int>(*rank));
        if (first_host.empty()) first_host = t[8];
      }
    } else if (line.rfind("# nThread", 0) == 0) {
      // "... warmup iters: 5 iters: 20 agg iters: 1 ...": the timed iterations are the bare "iters:".
      const auto t = split_ws(line);
      for (std::size_t i = 1; i + 1 < t.size(); ++i) {
        if (t[i] == "iters:" && t[i - 1] != "warmup" && t[i - 1] != "agg") iters = as_count(to_number(t[i + 1]).value_or(0));
      }
    } else if (line.rfind("#", 0) == 0 && line.find("size") != std::string::npos && line.find("count") != std::string::npos) {
      columns = split_ws(line.substr(1));
    } else if (line.find("Avg bus bandwidth") != std::string::npos) {
      out.details["avg_busbw_GBps"] = to_number(trim(line.substr(line.find(':') + 1))).value_or(0);
    } else if (line.find("Out of bounds values") != std::string::npos) {
      const auto words = split_ws(line.substr(line.find(':') + 1));
      out.details["out_of_bounds"] = words.empty() ? 0 : to_number(words[0]).value_or(0);
    } else if (!columns.empty() && !line.starts_with("#")) {
      auto t = split_ws(line);
      if (!t.empty() && to_number(t[0])) rows.push_back({number, std::move(t)});
    }
  }
  if (rows.empty()) return out;
  op = resolve_op(o, op, file);
  const int world = o.world > 0 ? o.world : ranks.empty() ? 1 : static_cast<int>(ranks.size());
  const std::string host = !o.host.empty() ? o.host : first_host.empty() ? "imported" : first_host;
  // Column positions from the header: the first "time" starts out-of-place, the second in-place.
  std::vector<std::size_t> time_at;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == "time" || columns[i] == "cputime") time_at.push_back(i);
  }
  const bool has_root = std::find(columns.begin(), columns.end(), "root") != columns.end();
  if (time_at.empty()) throw InputError(file, 0, "", "nccl-tests header without a time column");
  for (const auto& row : rows) {
    const auto& t = row.tokens;
    // A row as long as the header; out-of-place may be blank (trace replay) and then the row is shorter.
    const std::size_t shift = columns.size() > t.size() ? columns.size() - t.size() : 0;
    auto half_at = [&](std::size_t start) {
      Half h;
      if (start + 3 >= t.size() + shift || start < shift) return h;
      h.time = to_number(t[start - shift]);
      h.algbw = to_number(t[start + 1 - shift]);
      h.busbw = to_number(t[start + 2 - shift]);
      h.wrong = to_number(t[start + 3 - shift]);
      return h;
    };
    if (t.size() < (has_root ? 5u : 4u)) throw InputError(file, row.line, "", "nccl-tests row too short");
    const std::string type = t[2], redop = t[3], root = has_root ? t[4] : "";
    const double bytes = *to_number(t[0]);
    for (std::size_t k = 0; k < time_at.size() && k < 2; ++k) {
      const Half h = half_at(time_at[k]);
      if (!h.time) continue;
      out.results.push_back(collective(op, host, world, bytes, type, redop, root, k == 1, h, iters));
    }
  }
  return out;
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
  std::string op;
  if (doc.contains("args") && doc["args"].is_array() && !doc["args"].empty()) op = op_from_program(doc["args"][0].get<std::string>());
  op = resolve_op(o, op, file);
  const json config = doc.value("config", json::object());
  const json devices = config.value("devices", json::array());
  const int world = o.world > 0 ? o.world : devices.empty() ? 1 : static_cast<int>(devices.size());
  std::string host = o.host;
  if (host.empty()) host = devices.empty() ? "imported" : devices[0].value("hostname", std::string("imported"));
  const long long iters = config.value("iterations", 0LL);
  if (doc.contains("average_bus_bandwidth")) out.details["avg_busbw_GBps"] = doc["average_bus_bandwidth"].value("bandwidth", 0.0);
  auto num = [](const json& j, const char* key) -> std::optional<double> {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
  };
  for (std::size_t i = 0; i < doc["results"].size(); ++i) {
    const json& r = doc["results"][i];
    if (!r.is_object() || !num(r, "size")) throw InputError(file, 0, "results[" + std::to_string(i) + "].size", "missing or not a number");
    for (const char* half : {"out_of_place", "in_place"}) {
      const auto it = r.find(half);
      if (it == r.end() || !it->is_object()) continue;
      Half h{num(*it, "time") ? num(*it, "time") : num(*it, "cpu_time"), num(*it, "alg_bw"), num(*it, "bus_bw"), num(*it, "nwrong")};
      if (!h.time) continue;
      const std::string root = r.value("root", std::string(""));
      out.results.push_back(collective(op, host, world, *num(r, "size"), r.value("type", std::string("")),
                                       r.value("redop", std::string("")), root, std::string(half) == "in_place", h, iters));
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
