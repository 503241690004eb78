#include "rocebench/reports/importers.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

double busbw_factor(const std::string& op, int n) {
  if (n < 1) return 0;
  const double r = static_cast<double>(n);
  if (op == "allreduce") return 2 * (r - 1) / r;
  if (op == "allgather" || op == "reduce_scatter" || op == "alltoall") return (r - 1) / r;
  if (op == "broadcast" || op == "reduce") return 1;
  return 0;
}

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
  std::ifstream in(file, std::ios::binary);
  if (!in) throw InputError(file.string(), 0, "", "cannot open the file to import");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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

}  // namespace rocebench::reports
