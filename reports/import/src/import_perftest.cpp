// perftest (linux-rdma/perftest) results. The text table follows a banner naming the test
// ("RDMA_Write Latency Test", "Send BW Test") and a header line:
//   #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]
//   #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]     (or [MiB/sec]; [MB/sec] in old
//                                                                             versions, where MB meant 2^20 bytes)
// Columns are found by their labels, so that QoS (#sl), --report-per-port and --cpu_util tables read
// right; error lines (" Completion with error at client") fail the records.
// --out_json writes "key: value," lines in test_info / results blocks, with unquoted keys in the
// versions Debian ships (perftest issue #216), and no unit for the bandwidth.
#include <algorithm>
#include <map>
#include <optional>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

constexpr double kMiBpsToGbps = 1048576.0 * 8 / 1e9;

// "RDMA_Write Latency Test" / "RDMA_Write_Latency_Test" -> "write_lat"; empty when not a banner.
std::string test_name(const std::string& banner) {
  const bool lat = banner.find("Latency") != std::string::npos;
  const bool bw = banner.find("BW") != std::string::npos;
  if (!lat && !bw) return "";
  std::string verb;
  if (banner.find("RDMA_Write") != std::string::npos) verb = "write";
  else if (banner.find("RDMA_Read") != std::string::npos) verb = "read";
  else if (banner.find("Send") != std::string::npos) verb = "send";
  else if (banner.find("Atomic") != std::string::npos) verb = "atomic";
  else return "";
  return verb + (lat ? "_lat" : "_bw");
}

ResultRecord probe(const ImportOptions& o, const std::string& host, const std::string& test, double bytes) {
  ResultRecord r;
  r.step = "microbench.probe";
  r.host = host;
  r.world = 2;
  r.params = {{"transport", o.transport.empty() ? "verbs" : o.transport}, {"test", test}, {"bytes", as_count(bytes)}};
  if (!o.peer.empty()) r.params["peer"] = o.peer;
  return r;
}

void latency_metrics(ResultRecord& r, double iters, double min, double max, double typical, double avg, double stdev,
                     double p99, double p999) {
  r.metrics = {{"lat_us_min", min},     {"lat_us_max", max}, {"lat_us_p50", typical}, {"lat_us_avg", avg},
               {"lat_us_stdev", stdev}, {"lat_us_p99", p99}, {"lat_us_p99_9", p999}};
  r.samples = {{"n", as_count(iters)}, {"min", min}, {"max", max}, {"median", typical}, {"avg", avg},
               {"stdev", stdev}, {"p99", p99}, {"p99_9", p999}};
}

void bandwidth_metrics(ResultRecord& r, double iters, double peak, double avg, double mpps, double to_gbps) {
  r.metrics = {{"bw_peak_Gbps", peak * to_gbps}, {"bw_avg_Gbps", avg * to_gbps}, {"msg_rate_Mpps", mpps}};
  r.samples = {{"n", as_count(iters)}};
}

// perftest's failure messages (perftest_resources.c, perftest_parameters.c, the *_bw / *_lat mains).
constexpr std::string_view kErrorMarkers[] = {"Completion with error", "Failed status", "Failed to complete", "Couldn't post",
                                              "CQ failed",             "exited with Error", "Error occurred", "Error: "};

// Columns a table header may hold, by the label perftest prints (perftest_parameters.h RESULT_FMT*):
// QoS adds #sl, --report-per-port the ports' columns, --cpu_util CPU_Util.
constexpr std::string_view kColumns[] = {"#bytes",         "#sl",           "#iterations",   "BW peak",       "BW average",
                                         "MsgRate[",       "BW Port1",      "MsgRate Port1", "BW Port2",      "MsgRate Port2",
                                         "t_min",          "t_max",         "t_typical",     "t_avg",         "t_stdev",
                                         "99% percentile", "99.9% percentile", "tps average", "CPU_Util"};

// The columns of a header line, in the order printed.
std::vector<std::string> columns_of(const std::string& header) {
  std::vector<std::pair<std::size_t, std::string>> found;
  for (const auto label : kColumns) {
    if (const auto at = header.find(label); at != std::string::npos) found.emplace_back(at, label);
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [at, label] : found) out.push_back(label == "MsgRate[" ? "MsgRate" : label);
  return out;
}

enum class Table { none, latency, latency_duration, bandwidth };

// One row of a table, checked column by column.
ResultRecord perftest_row(const ResultRecord& base, Table table, const std::vector<std::string>& columns, double to_gbps,
                          const std::string& file, int number, const std::vector<std::string>& tokens) {
  if (tokens.size() != columns.size()) {
    throw RowError(file, number, "", "the row has " + std::to_string(tokens.size()) + " values where the header has " +
                                         std::to_string(columns.size()) + ": cut short, or run into the next line");
  }
  std::map<std::string, double, std::less<>> v;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const bool whole = columns[i].starts_with("#");
    v[columns[i]] = row_number(file, number, columns[i], tokens[i], whole ? Bound::whole : Bound::non_negative);
  }
  auto need = [&](const char* column) {
    const auto it = v.find(column);
    if (it == v.end()) throw InputError(file, number, "", std::string("perftest table without its '") + column + "' column");
    return it->second;
  };
  ResultRecord r = base;
  r.params["bytes"] = as_count(need("#bytes"));
  if (table == Table::bandwidth && need("#bytes") == 0) throw RowError(file, number, "", "column '#bytes': a bandwidth of 0-byte messages");
  if (table == Table::latency) {
    latency_metrics(r, need("#iterations"), need("t_min"), need("t_max"), need("t_typical"), need("t_avg"), need("t_stdev"),
                    need("99% percentile"), need("99.9% percentile"));
  } else if (table == Table::latency_duration) {
    r.metrics = {{"lat_us_avg", need("t_avg")}, {"msg_rate_Mpps", need("tps average") / 1e6}};
    r.samples = {{"n", as_count(need("#iterations"))}};
  } else {
    bandwidth_metrics(r, need("#iterations"), need("BW peak"), need("BW average"), need("MsgRate"), to_gbps);
  }
  return r;
}

Imported parse_text(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  const std::string host = o.host.empty() ? "imported" : o.host;
  std::string test;
  Table table = Table::none;
  std::vector<std::string> columns;
  std::vector<std::string> failures;
  double to_gbps = 1;
  for (const auto& numbered : numbered_lines(text)) {
    const int number = numbered.first;  // plain names: clang 14 cannot capture structured bindings
    const std::string& line = numbered.second;
    if (const std::string t = test_name(line); !t.empty() && line.find(':') == std::string::npos) {
      test = t;
      continue;
    }
    if (line.find("Device ") != std::string::npos && line.find(':') != std::string::npos) {
      out.details["device"] = trim(line.substr(line.rfind(':') + 1));
    }
    if (line.find("Link type") != std::string::npos) out.details["link_type"] = trim(line.substr(line.find(':') + 1));
    if (line.find("#bytes") != std::string::npos) {
      if (test.empty()) throw InputError(file, number, "", "perftest table without the banner that names the test");
      if (line.find("t_min") != std::string::npos) table = Table::latency;
      else if (line.find("tps average") != std::string::npos) table = Table::latency_duration;
      else if (line.find("BW peak[Gb/sec]") != std::string::npos) { table = Table::bandwidth; to_gbps = 1; }
      else if (line.find("BW peak[MiB/sec]") != std::string::npos || line.find("BW peak[MB/sec]") != std::string::npos) {
        table = Table::bandwidth;
        to_gbps = kMiBpsToGbps;
      } else {
        throw InputError(file, number, "", "unknown perftest table header");
      }
      columns = columns_of(line);
      continue;
    }
    if (const std::string failure = failure_in(line, kErrorMarkers); !failure.empty()) {
      failures.push_back(located_message(file, number, "", failure));
      continue;
    }
    const auto tokens = split_ws(line);
    if (table == Table::none || tokens.empty() || !to_number(tokens[0])) {
      if (line.find("-----") != std::string::npos) table = Table::none;  // a rule closes the table
      continue;
    }
    read_row(out, o, [&] { out.results.push_back(perftest_row(probe(o, host, test, 0), table, columns, to_gbps, file, number, tokens)); });
  }
  for (const auto& why : failures) mark_failed(out.results, 0, why);
  return out;
}

// --out_json: "key: value," lines; a block per "name: {".
Imported parse_json(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  const std::string host = o.host.empty() ? "imported" : o.host;
  double to_gbps = kMiBpsToGbps;
  if (o.bw_units == "Gb/s" || o.bw_units == "gbps") to_gbps = 1;
  else if (!o.bw_units.empty() && o.bw_units != "MiB/s" && o.bw_units != "mibps") {
    throw InputError("--bw-units must be MiB/s or Gb/s, got '" + o.bw_units + "'");
  }
  out.details["bw_units"] = to_gbps == 1 ? "Gb/s" : "MiB/s";
  auto unquote = [](std::string s) {
    s = trim(s);
    if (!s.empty() && s.back() == ',') s.pop_back();
    s = trim(s);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
    return s;
  };
  std::string block, test;
  std::map<std::string, std::pair<int, std::string>> fields;  // key -> line, value
  int block_line = 0;
  auto need = [&](const char* key, Bound bound = Bound::non_negative) {
    const auto it = fields.find(key);
    if (it == fields.end()) throw RowError(file, block_line, std::string("results.") + key, "missing");
    return row_number(file, it->second.first, std::string("results.") + key, it->second.second, bound);
  };
  auto text_of = [&](const char* key) { return fields.contains(key) ? fields[key].second : std::string(); };
  auto result = [&] {
    ResultRecord r = probe(o, host, test, need("MsgSize", Bound::whole));
    if (fields.contains("t_typical")) {
      latency_metrics(r, need("n_iterations", Bound::whole), need("t_min"), need("t_max"), need("t_typical"), need("t_avg"),
                      need("t_stdev"), need("percentile_99"), need("percentile_99.9"));
    } else if (fields.contains("BW_average")) {
      bandwidth_metrics(r, need("n_iterations", Bound::whole), need("BW_peak"), need("BW_average"), need("MsgRate"), to_gbps);
    } else {
      r.metrics = {{"lat_us_avg", need("t_avg")}};
      r.samples = {{"n", as_count(need("n_iterations", Bound::whole))}};
    }
    out.results.push_back(std::move(r));
  };
  for (const auto& [number, line] : numbered_lines(text)) {
    const std::string t = trim(line);
    if (t.ends_with("{") && t.find(':') != std::string::npos) {
      block = unquote(t.substr(0, t.find(':')));
      block_line = number;
      fields.clear();
      continue;
    }
    if (t.starts_with("}")) {
      if (block == "test_info") {
        test = test_name(text_of("test"));
        if (test.empty()) throw InputError(file, block_line, "test_info.test", "unknown perftest test '" + text_of("test") + "'");
        out.details["device"] = text_of("Device");
        out.details["link_type"] = text_of("Link_type");
      } else if (block == "results") {
        if (test.empty()) throw InputError(file, block_line, "results", "results before test_info");
        read_row(out, o, result);
      }
      block.clear();
      continue;
    }
    if (const auto colon = t.find(':'); colon != std::string::npos && !block.empty()) {
      fields[unquote(t.substr(0, colon))] = {number, unquote(t.substr(colon + 1))};
    }
  }
  return out;
}

}  // namespace

Imported parse_perftest(const std::string& text, const std::string& file, const ImportOptions& options) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{' ? parse_json(text, file, options) : parse_text(text, file, options);
}

}  // namespace rocebench::reports
