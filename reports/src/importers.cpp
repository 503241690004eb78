#include "rocebench/reports/importers.hpp"

#include <fstream>
#include <sstream>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"

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
