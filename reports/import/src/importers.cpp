#include "rocebench/reports/importers.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/results_limits.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

std::vector<std::pair<int, std::string>> numbered_lines(const std::string& text) {
  std::vector<std::pair<int, std::string>> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) out.emplace_back(++n, line);
  return out;
}

double row_number(const std::string& file, int line, const std::string& column, std::string_view token, Bound bound) {
  auto fail = [&](const std::string& why) {
    throw RowError(file, line, "", "column '" + column + "': '" + printable_excerpt(token, 40) + "' " + why);
  };
  const auto v = to_number(token);
  if (!v || !std::isfinite(*v)) fail("is not a number (a row cut short or run into the next?)");
  if (bound != Bound::any && *v < 0) fail("is negative");
  if (bound == Bound::whole && *v != std::floor(*v)) fail("is not a whole number");
  if (bound == Bound::whole && *v >= 9.2e18) fail("is too large for a size or count");  // casts stay defined
  return *v;
}

void read_row(Imported& out, const ImportOptions& options, const std::function<void()>& read) {
  try {
    read();
  } catch (const RowError& e) {
    if (!options.lenient) throw;
    out.skipped.emplace_back(e.what());
  }
}

std::string failure_in(std::string_view line, std::span<const std::string_view> markers) {
  // What Open MPI, MPICH and Slurm print when a rank aborts or dies: the run is not healthy.
  static constexpr std::string_view kLauncher[] = {"MPI_ABORT was invoked", "An error occurred in MPI_", "exited on signal",
                                                   "Segmentation fault", "srun: error:", "BAD TERMINATION"};
  auto has = [&](std::string_view marker) { return line.find(marker) != std::string_view::npos; };
  bool found = false;
  for (const auto marker : markers) found = found || has(marker);
  for (const auto marker : kLauncher) found = found || has(marker);
  return found ? printable_excerpt(trim(line), 200) : "";
}

void mark_failed(std::vector<ResultRecord>& records, std::size_t from, const std::string& reason) {
  for (std::size_t i = from; i < records.size(); ++i) {
    ResultRecord& r = records[i];
    if (r.reason.find(reason) != std::string::npos) continue;
    r.status = Status::fail;
    r.reason = r.reason.empty() ? reason : r.reason + "; " + reason;
  }
}

void mark_ranks_unknown(ResultRecord& r) {
  r.world = 1;
  r.params["ranks"] = "unknown";
}

std::vector<json> import_file(const std::string& tool, const std::filesystem::path& file, const ImportOptions& options) {
  // A tool's output: nccl-tests' sweep of every size is ~100 lines, a long MPI job's log a few MB.
  static constexpr InputLimits kImportLimits{"tool output to import", 64 * kMiB, 4 * kMiB};
  const std::string text = read_input(file, kImportLimits);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw InputError(file.string(), 0, "", "the file is empty");

  Imported imported;
  if (tool == "perftest") imported = parse_perftest(text, file.string(), options);
  else if (tool == "nccl-tests") imported = parse_nccl_tests(text, file.string(), options);
  else if (tool == "osu") imported = parse_osu(text, file.string(), options);
  else throw InputError("unknown tool '" + tool + "': expected perftest, nccl-tests or osu");
  if (imported.results.empty()) throw InputError(file.string(), 0, "", "no " + tool + " result table found");

  const std::string run = options.run.empty() ? "import-" + tool + "-" + file.stem().string() : options.run;
  imported.details["tool"] = tool;
  imported.details["file"] = file.string();
  imported.details["records"] = imported.results.size();
  if (!imported.skipped.empty()) imported.details["skipped_rows"] = imported.skipped;
  std::vector<json> out{event_record(run, "reports.import",
                                     "imported " + std::to_string(imported.results.size()) + " " + tool + " results from " +
                                         file.filename().string(),
                                     imported.details)};
  for (auto& r : imported.results) {
    r.params["tool"] = tool;
    out.push_back(to_json(r, run));
  }
  for (const auto& record : out) {
    const auto errors = result_schema().validate(record);
    if (!errors.empty()) {
      throw InfraError("importer produced a record that breaks the schema (a bug): " + errors.front().pointer + ": " +
                       errors.front().message);
    }
  }
  return out;
}

namespace {

// A line of a results file: a JSON object that names the record schema.
bool is_record_line(const std::string& line) {
  const json j = json::parse(line, nullptr, false);
  if (!j.is_object()) return false;
  const auto it = j.find("schema");
  return it != j.end() && it->is_string() && it->get<std::string>().starts_with("rocebench.result/");
}

// The first line that is not blank, its number, and whether it is complete (ends with '\n').
struct FirstLine {
  std::string text;
  int number = 0;
  bool complete = false;
};
FirstLine first_line(LineReader& lines) {
  FirstLine f;
  for (std::string_view line; lines.next(line);) {
    f = {std::string(line), lines.number(), lines.complete()};
    if (!trim(f.text).empty()) break;
  }
  return f;
}

// The last complete line among the last MiB of `in` ("" when the tail holds none), and whether the
// file ends mid-line. Only the tail is read: a results file may hold millions of records.
std::pair<std::string, bool> last_complete_line(std::istream& in) {
  constexpr std::streamoff kTail = 1 << 20;
  in.clear();
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - kTail);
  std::string tail(static_cast<std::size_t>(size - from), '\0');
  in.seekg(from);
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  const bool cut = !tail.empty() && tail.back() != '\n';
  tail.erase(tail.find_last_of('\n') + 1);  // drop a cut last line (npos + 1 is 0: all of it)
  if (!tail.empty()) tail.pop_back();
  const auto start = tail.find_last_of('\n');
  if (start == std::string::npos && from > 0) return {"", cut};  // a line longer than the tail
  return {start == std::string::npos ? tail : tail.substr(start + 1), cut};
}

}  // namespace

bool check_results_file_for_append(const std::filesystem::path& file) {
  std::error_code absent;
  if (!std::filesystem::exists(file, absent)) return false;  // RecordWriter creates it (or says why it cannot)
  LineReader lines(file, kResultsLimits);  // a results file, within its limits: not /dev/zero
  auto refuse = [&](int line, const std::string& text, const char* which) {
    throw InputError(file.string(), line, "",
                     std::string(which) + " is not a rocebench result record ('" + printable_excerpt(trim(text), 60) +
                         "'): -o appends to a results file, and this is another kind of file");
  };
  const FirstLine first = first_line(lines);
  if (trim(first.text).empty()) return false;  // empty, or blank lines only
  std::ifstream in(file, std::ios::binary);
  // A first line that is also the cut last one may be a record its writer did not finish.
  if (first.complete ? !is_record_line(first.text) : !trim(first.text).starts_with("{")) refuse(first.number, first.text, "its first line");
  const auto [last, cut] = last_complete_line(in);
  if (!trim(last).empty() && !is_record_line(last)) refuse(0, last, "its last complete line");
  return cut;
}

}  // namespace rocebench::reports
