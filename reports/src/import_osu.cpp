// OSU micro-benchmarks results: a title, optional "# Datatype: MPI_CHAR." line, a header and rows:
//   # OSU MPI Latency Test v7.3              # Size          Latency (us)      (7.x: "Avg Latency(us)")
//   # OSU MPI Bandwidth Test v7.3            # Size      Bandwidth (MB/s)      (MB = 10^6 bytes)
//   # OSU MPI Allreduce Latency Test v7.3    # Size       Avg Latency(us)   [Min Latency(us)  Max Latency(us)  Iterations]
// OSU does not print the number of ranks of a collective: --world gives it (busbw needs it).
#include <algorithm>
#include <cctype>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

// The collective a title names ("Allreduce", "All-to-All Personalized Exchange"), empty for point-to-point.
std::string collective_of(std::string title) {
  std::transform(title.begin(), title.end(), title.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::pair<const char*, const char*> names[] = {
      {"reduce_scatter", "reduce_scatter"}, {"reduce-scatter", "reduce_scatter"}, {"allreduce", "allreduce"},
      {"allgather", "allgather"}, {"all-to-all", "alltoall"}, {"alltoall", "alltoall"}, {"broadcast", "broadcast"},
      {"bcast", "broadcast"}, {"reduce", "reduce"}, {"gather", "gather"}, {"scatter", "scatter"}};
  for (const auto& [needle, op] : names) {
    if (title.find(needle) != std::string::npos) return op;
  }
  return "";
}

// Header columns: "Size", "Avg Latency(us)", ... split on runs of two or more blanks.
std::vector<std::string> header_columns(const std::string& line) {
  std::vector<std::string> out;
  std::string current;
  int blanks = 0;
  for (char c : line.substr(1)) {
    if (c == ' ' || c == '\t') {
      ++blanks;
      continue;
    }
    if (blanks >= 2 && !current.empty()) {
      out.push_back(current);
      current.clear();
    } else if (blanks == 1 && !current.empty()) {
      current += ' ';
    }
    blanks = 0;
    current += c;
  }
  if (!current.empty()) out.push_back(current);
  return out;
}

}  // namespace

Imported parse_osu(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  std::string title, op, dtype;
  std::vector<std::string> columns;
  const std::string host = o.host.empty() ? "imported" : o.host;
  for (const auto& [number, line] : numbered_lines(text)) {
    if (line.rfind("# OSU", 0) == 0) {
      title = trim(line.substr(2));
      op = collective_of(title.substr(0, title.find(" Test")));
      out.details["benchmark"] = title;
      columns.clear();
      continue;
    }
    if (line.rfind("# Datatype:", 0) == 0) {
      dtype = trim(line.substr(11));
      if (!dtype.empty() && dtype.back() == '.') dtype.pop_back();
      continue;
    }
    if (line.rfind("# Size", 0) == 0) {
      if (title.empty()) throw InputError(file, number, "", "OSU table without its '# OSU ... Test' title");
      columns = header_columns(line);
      continue;
    }
    const auto tokens = split_ws(line);
    if (columns.empty() || tokens.empty() || line[0] == '#' || !to_number(tokens[0])) continue;
    if (tokens.size() < columns.size()) throw InputError(file, number, "", "OSU row has fewer columns than its header");
    auto column = [&](const std::string& prefix) -> std::optional<double> {
      for (std::size_t i = 1; i < columns.size(); ++i) {
        if (columns[i].rfind(prefix, 0) == 0) return to_number(tokens[i]);
      }
      return std::nullopt;
    };
    const double bytes = *to_number(tokens[0]);
    ResultRecord r;
    r.host = host;
    const auto latency = column("Avg Latency") ? column("Avg Latency") : column("Latency");
    const auto bandwidth = column("Bandwidth");
    if (!latency && !bandwidth) throw InputError(file, number, "", "OSU row without a latency or bandwidth column");
    if (op.empty()) {
      r.step = "microbench.probe";
      r.world = o.world > 0 ? o.world : 2;
      r.params = {{"transport", o.transport.empty() ? "mpi" : o.transport}, {"test", latency ? "lat" : "bw"}, {"bytes", bytes}};
      if (!o.peer.empty()) r.params["peer"] = o.peer;
      if (latency) r.metrics = {{"lat_us_avg", *latency}};
      else r.metrics = {{"bw_avg_Gbps", *bandwidth * 8 / 1000}};  // MB/s (10^6 bytes) to Gb/s
    } else {
      if (o.world < 1) throw InputError(file, number, "", "OSU does not print how many ranks ran the collective: pass --world N");
      if (!latency) throw InputError(file, number, "", "OSU collective row without an average latency");
      r.step = "collectives." + op;
      r.world = o.world;
      r.params = {{"algorithm", "mpi"}, {"transport", o.transport.empty() ? "mpi" : o.transport}, {"bytes", bytes},
                  {"dtype", dtype.empty() ? "MPI_CHAR" : dtype}, {"inplace", false}};
      const double algbw = *latency > 0 ? bytes / *latency / 1e3 : 0;  // bytes per µs to GB/s
      r.metrics = {{"time_us", *latency}, {"algbw_GBps", algbw}, {"busbw_GBps", algbw * busbw_factor(op, o.world)}};
      if (auto min = column("Min Latency")) r.metrics["lat_us_min"] = *min;
      if (auto max = column("Max Latency")) r.metrics["lat_us_max"] = *max;
    }
    r.samples = json::object();
    if (auto iters = column("Iterations")) r.samples = {{"n", as_count(*iters)}};
    out.results.push_back(std::move(r));
  }
  return out;
}

}  // namespace rocebench::reports
