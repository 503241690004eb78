#pragma once
// Importers: other tools' outputs turned into result records, so that existing results are judged
// like our own. Each record carries params.tool and the step names of the record contract:
//   perftest   (ib_{write,read,send}_{lat,bw} text tables, --out_json files) -> microbench.probe
//   nccl-tests (*_perf text tables, -J JSON files)                            -> collectives.<op>
//   osu        (osu_latency / osu_bw / osu_bibw)                             -> microbench.probe
//              (osu_allreduce, osu_allgather, ...)                           -> collectives.<op>
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports {

struct ImportOptions {
  std::string run;        // run id of the records; default "import-<tool>-<file stem>"
  std::string host;       // default: from the output when it names hosts, else "imported"
  std::string peer;       // the other endpoint of a probe, when known
  std::string transport;  // probes: verbs (perftest's default) | tcp | ...
  std::string bw_units;   // perftest JSON carries no unit: "MiB/s" (perftest's default) or "Gb/s"
  std::string op;         // nccl-tests: the collective when the output does not name it
  int world = 0;          // ranks, when the output does not say (OSU collectives)
};

// What an importer read: the records, and facts about the source for the import event.
struct Imported {
  std::vector<ResultRecord> results;
  json details = json::object();
};

// Each throws InputError naming the file and line when the text is not what the tool prints.
Imported parse_perftest(const std::string& text, const std::string& file, const ImportOptions& options);
Imported parse_nccl_tests(const std::string& text, const std::string& file, const ImportOptions& options);
Imported parse_osu(const std::string& text, const std::string& file, const ImportOptions& options);

// Reads `file` with the importer of `tool` and returns the records to append: an import event,
// then the results. Every record is checked against the result schema.
std::vector<json> import_file(const std::string& tool, const std::filesystem::path& file, const ImportOptions& options);

// Bus bandwidth factor of nccl-tests' PERFORMANCE.md for `op` on n ranks (0 when unknown).
double busbw_factor(const std::string& op, int ranks);

// Splits text into lines, keeping their 1-based numbers.
std::vector<std::pair<int, std::string>> numbered_lines(const std::string& text);

}  // namespace rocebench::reports
