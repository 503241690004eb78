// OSU micro-benchmarks results: a title, optional "# Datatype: MPI_CHAR." line, a header and rows:
//   # OSU MPI Latency Test v7.3              # Size          Latency (us)      (7.x: "Avg Latency(us)")
//   # OSU MPI Bandwidth Test v7.3            # Size      Bandwidth (MB/s)      (MB = 10^6 bytes)
//   # OSU MPI Allreduce Latency Test v7.3    # Size       Avg Latency(us)   [Min Latency(us)  Max Latency(us)  Iterations]
// with -c, a "Validation" column of Pass or Fail. A log may hold several benchmarks one after the
// other: each title starts a series of its own, named after the program (params.benchmark, e.g.
// osu_bibw), so that osu_bibw is never averaged with osu_bw.
// OSU does not print the number of ranks of a collective: --world gives it (busbw needs it).
#include <algorithm>
#include <cctype>
#include <map>

#include "rocebench/common/bus_bandwidth.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

// OMB's own error messages (osu_util.h: OMB_ERROR_EXIT, OMB_CHECK_NULL_AND_EXIT, CHECK, CUDA_CHECK).
constexpr std::string_view kErrorMarkers[] = {"] Error: ", "] Failed with message", "] function call failed", "] CUDA call",
                                              "] ROCM call"};

// "OSU MPI-CUDA Bi-Directional Bandwidth Test v7.1" -> "bi-directional bandwidth", "OSU MPI_Get latency
// Test" -> "get latency": the benchmark's words, without the device and version.
std::string benchmark_words(const std::string& title) {
  std::string lower = title.substr(0, title.find(" Test"));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string out;
  for (std::string word : split_ws(lower)) {
    if (word == "osu") continue;
    if (word.starts_with("mpi")) word = word.substr(0, word.find('-')).substr(word[3] == '_' ? 4 : 3);  // MPI-CUDA, MPI_Get-ROCM
    if (word.empty()) continue;
    out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

// The program that prints a title: the names OMB installs, whose words differ from the title's.
std::string program_of(const std::string& words) {
  static const std::pair<const char*, const char*> known[] = {
      {"latency", "osu_latency"}, {"bandwidth", "osu_bw"}, {"bi-directional bandwidth", "osu_bibw"},
      {"multiple bandwidth / message rate", "osu_mbw_mr"}, {"multi latency", "osu_multi_lat"},
      {"multi-threaded latency", "osu_latency_mt"}, {"multi-process latency", "osu_latency_mp"},
      {"put latency", "osu_put_latency"}, {"get latency", "osu_get_latency"}, {"put bandwidth", "osu_put_bw"},
      {"get bandwidth", "osu_get_bw"}, {"put bi-directional bandwidth", "osu_put_bibw"},
      {"accumulate latency", "osu_acc_latency"}, {"get_accumulate latency", "osu_get_acc_latency"},
      {"fetch_and_op latency", "osu_fop_latency"}, {"compare_and_swap latency", "osu_cas_latency"},
      {"broadcast latency", "osu_bcast"}, {"all-to-all personalized exchange latency", "osu_alltoall"}};
  for (const auto& [title, program] : known) {
    if (words == title) return program;
  }
  // Collectives: "allreduce latency" -> osu_allreduce, "non-blocking allreduce latency" -> osu_iallreduce.
  std::string name = words.starts_with("non-blocking ") ? "i" + words.substr(13) : words;
  if (name.ends_with(" latency")) name.resize(name.size() - 8);
  std::string out = "osu_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

// Benchmarks whose ranks come in pairs of any number: two only when --world says so.
bool multi_pair(const std::string& benchmark) { return benchmark == "osu_mbw_mr" || benchmark == "osu_multi_lat"; }

// The collective a benchmark runs ("allreduce latency", "all-to-all personalized exchange latency"),
// empty for point-to-point and one-sided ones.
std::string collective_of(const std::string& words) {
  const std::pair<const char*, const char*> names[] = {
      {"reduce_scatter", "reduce_scatter"}, {"reduce-scatter", "reduce_scatter"}, {"allreduce", "allreduce"},
      {"allgather", "allgather"}, {"all-to-all", "alltoall"}, {"alltoall", "alltoall"}, {"broadcast", "broadcast"},
      {"bcast", "broadcast"}, {"reduce", "reduce"}, {"gather", "gather"}, {"scatter", "scatter"}};
  for (const auto& [needle, op] : names) {
    if (words.find(needle) != std::string::npos) return op;
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

// One benchmark of the log: from its title to the next.
struct Section {
  std::string benchmark, op, dtype;
  std::vector<std::string> columns;
  std::size_t first = 0;              // its first record in the results
  std::vector<std::string> failures;  // error lines after its title
};

// A row's numbers by column name (Validation, a word, is left out).
using Values = std::map<std::string, double, std::less<>>;

std::optional<double> column(const Values& v, std::string_view prefix) {
  for (const auto& [name, value] : v) {
    if (name.starts_with(prefix)) return value;
  }
  return std::nullopt;
}

std::optional<double> latency_of(const Values& v) { return column(v, "Avg Latency") ? column(v, "Avg Latency") : column(v, "Latency"); }

ResultRecord osu_probe(const Section& s, const ImportOptions& o, const Values& v, const std::string& file, int number) {
  const auto latency = latency_of(v);
  const auto bandwidth = column(v, "Bandwidth") ? column(v, "Bandwidth") : column(v, "MB/s");
  if (!latency && !bandwidth) throw RowError(file, number, "", "OSU row without a latency or bandwidth column");
  ResultRecord r;
  r.step = "microbench.probe";
  r.world = o.world > 0 ? o.world : 2;
  r.params = {{"transport", o.transport.empty() ? "mpi" : o.transport}, {"test", latency ? "lat" : "bw"}, {"bytes", as_count(v.at("Size"))}};
  if (!o.peer.empty()) r.params["peer"] = o.peer;
  if (o.world < 1 && multi_pair(s.benchmark)) mark_ranks_unknown(r);
  if (latency) r.metrics = {{"lat_us_avg", *latency}};
  else r.metrics = {{"bw_avg_Gbps", *bandwidth * 8 / 1000}};  // MB/s (10^6 bytes) to Gb/s
  if (auto rate = column(v, "Messages/s")) r.metrics["msg_rate_Mpps"] = *rate / 1e6;
  return r;
}

ResultRecord osu_collective(const Section& s, const ImportOptions& o, const Values& v, const std::string& file, int number) {
  if (o.world < 1) throw InputError(file, number, "", "OSU does not print how many ranks ran the collective: pass --world N");
  const auto latency = latency_of(v);
  if (!latency) throw RowError(file, number, "", "OSU collective row without an average latency");
  const double bytes = v.at("Size");
  ResultRecord r;
  r.step = "collectives." + s.op;
  r.world = o.world;
  r.params = {{"algorithm", "mpi"}, {"transport", o.transport.empty() ? "mpi" : o.transport}, {"bytes", as_count(bytes)},
              {"dtype", s.dtype.empty() ? "MPI_CHAR" : s.dtype}, {"inplace", false}};
  const double algbw = *latency > 0 ? bytes / *latency / 1e3 : 0;  // bytes per µs to GB/s
  r.metrics = {{"time_us", *latency}, {"algbw_GBps", algbw}, {"busbw_GBps", algbw * bus_factor(s.op, o.world)}};
  if (auto min = column(v, "Min Latency")) r.metrics["lat_us_min"] = *min;
  if (auto max = column(v, "Max Latency")) r.metrics["lat_us_max"] = *max;
  return r;
}

ResultRecord osu_record(const Section& s, const ImportOptions& o, const std::string& file, int number,
                        const std::vector<std::string>& tokens) {
  if (tokens.size() != s.columns.size()) {
    throw RowError(file, number, "", "the row has " + std::to_string(tokens.size()) + " values where the header has " +
                                         std::to_string(s.columns.size()) + ": cut short, or run into the next line");
  }
  Values v;
  std::string validation;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const std::string& name = i == 0 ? std::string("Size") : s.columns[i];
    if (name == "Validation") validation = tokens[i];
    else v[name] = row_number(file, number, name, tokens[i], i == 0 || name == "Iterations" ? Bound::whole : Bound::non_negative);
  }
  ResultRecord r = s.op.empty() ? osu_probe(s, o, v, file, number) : osu_collective(s, o, v, file, number);
  r.host = o.host.empty() ? "imported" : o.host;
  r.params["benchmark"] = s.benchmark;
  r.samples = json::object();
  if (auto iters = column(v, "Iterations")) r.samples = {{"n", static_cast<long long>(*iters)}};  // whole and in range
  if (!validation.empty() && validation != "Pass") {
    r.status = Status::fail;
    r.reason = located_message(file, number, "", "OSU validation (-c): " + printable_excerpt(validation, 20));
  }
  return r;
}

}  // namespace

Imported parse_osu(const std::string& text, const std::string& file, const ImportOptions& o) {
  Imported out;
  std::optional<Section> s;
  std::vector<std::string> failures;  // before any title: they concern every benchmark
  auto close = [&] {  // a benchmark's error lines fail its own records, also those printed before them
    if (!s) return;
    for (const auto& why : s->failures) mark_failed(out.results, s->first, why);
  };
  for (const auto& numbered : numbered_lines(text)) {
    const int number = numbered.first;  // plain names: clang 14 cannot capture structured bindings
    const std::string& line = numbered.second;
    if (line.rfind("# OSU", 0) == 0) {
      close();
      const std::string words = benchmark_words(trim(line.substr(2)));
      s = Section{program_of(words), collective_of(words), "", {}, out.results.size(), {}};
      out.details["benchmarks"].push_back(s->benchmark);
      out.details["titles"].push_back(printable_excerpt(trim(line.substr(2)), 200));  // name and OSU version, as printed
    } else if (line.rfind("# Datatype:", 0) == 0 && s) {
      s->dtype = trim(line.substr(11));
      if (!s->dtype.empty() && s->dtype.back() == '.') s->dtype.pop_back();
    } else if (line.rfind("# Size", 0) == 0) {
      if (!s) throw InputError(file, number, "", "OSU table without its '# OSU ... Test' title");
      s->columns = header_columns(line);
    } else if (const std::string failure = failure_in(line, kErrorMarkers); !failure.empty()) {
      (s ? s->failures : failures).push_back(located_message(file, number, "", failure));
    } else if (const auto tokens = split_ws(line); s && !s->columns.empty() && !tokens.empty() && line[0] != '#' && to_number(tokens[0])) {
      read_row(out, o, [&] { out.results.push_back(osu_record(*s, o, file, number, tokens)); });
    }
  }
  close();
  for (const auto& why : failures) mark_failed(out.results, 0, why);
  return out;
}

}  // namespace rocebench::reports
