// perftest (linux-rdma/perftest) results. The text table follows a banner naming the test
// ("RDMA_Write Latency Test", "Send BW Test") and a header line:
//   #bytes #iterations t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]
//   #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]     (or [MiB/sec]; [MB/sec] in old
//                                                                             versions, where MB meant 2^20 bytes)
// --out_json writes "key: value," lines in test_info / results blocks, with unquoted keys in the
// versions Debian ships (perftest issue #216), and no unit for the bandwidth.
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
  r.params = {{"transport", o.transport.empty() ? "verbs" : o.transport}, {"test", test}, {"bytes", bytes}};
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

Imported parse_text(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  const std::string host = o.host.empty() ? "imported" : o.host;
  std::string test;
  enum class Table { none, latency, latency_duration, bandwidth } table = Table::none;
  double to_gbps = 1;
  for (const auto& [number, line] : numbered_lines(text)) {
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
      continue;
    }
    const auto tokens = split_ws(line);
    if (table == Table::none || tokens.empty() || !to_number(tokens[0])) {
      if (line.find("-----") != std::string::npos) table = Table::none;  // a rule closes the table
      continue;
    }
    std::vector<double> v;
    for (const auto& t : tokens) {
      const auto x = to_number(t);
      if (!x) throw InputError(file, number, "", "expected numbers in the perftest table, got '" + t + "'");
      v.push_back(*x);
    }
    const std::size_t need = table == Table::latency ? 9 : table == Table::latency_duration ? 4 : 5;
    if (v.size() < need) throw InputError(file, number, "", "perftest row has " + std::to_string(v.size()) + " columns, expected " + std::to_string(need));
    ResultRecord r = probe(o, host, test, v[0]);
    if (table == Table::latency) latency_metrics(r, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]);
    else if (table == Table::latency_duration) {
      r.metrics = {{"lat_us_avg", v[2]}, {"msg_rate_Mpps", v[3] / 1e6}};
      r.samples = {{"n", as_count(v[1])}};
    } else {
      bandwidth_metrics(r, v[1], v[2], v[3], v[4], to_gbps);
    }
    out.results.push_back(std::move(r));
  }
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
  std::map<std::string, std::string> fields;
  int block_line = 0;
  auto need = [&](const char* key) {
    const auto it = fields.find(key);
    const auto v = it == fields.end() ? std::nullopt : to_number(it->second);
    if (!v) throw InputError(file, block_line, std::string("results.") + key, "missing or not a number");
    return *v;
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
        test = test_name(fields["test"]);
        if (test.empty()) throw InputError(file, block_line, "test_info.test", "unknown perftest test '" + fields["test"] + "'");
        out.details["device"] = fields["Device"];
        out.details["link_type"] = fields["Link_type"];
      } else if (block == "results") {
        if (test.empty()) throw InputError(file, block_line, "results", "results before test_info");
        ResultRecord r = probe(o, host, test, need("MsgSize"));
        if (fields.contains("t_typical")) {
          latency_metrics(r, need("n_iterations"), need("t_min"), need("t_max"), need("t_typical"), need("t_avg"),
                          need("t_stdev"), need("percentile_99"), need("percentile_99.9"));
        } else if (fields.contains("BW_average")) {
          bandwidth_metrics(r, need("n_iterations"), need("BW_peak"), need("BW_average"), need("MsgRate"), to_gbps);
        } else {
          r.metrics = {{"lat_us_avg", need("t_avg")}};
          r.samples = {{"n", as_count(need("n_iterations"))}};
        }
        out.results.push_back(std::move(r));
      }
      block.clear();
      continue;
    }
    if (const auto colon = t.find(':'); colon != std::string::npos && !block.empty()) {
      fields[unquote(t.substr(0, colon))] = unquote(t.substr(colon + 1));
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
