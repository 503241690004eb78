#pragma once
// Importers: other tools' outputs turned into result records, so that existing results are judged
// like our own. Each record carries params.tool and the step names of the record contract:
//   perftest   (ib_{write,read,send}_{lat,bw} text tables, --out_json files) -> microbench.probe
//   nccl-tests (*_perf text tables, -J JSON files)                            -> collectives.<op>
//   osu        (osu_latency / osu_bw / osu_bibw)                             -> microbench.probe
//              (osu_allreduce, osu_allgather, ...)                           -> collectives.<op>
// A run whose output reports a failure (nccl-tests' #wrong or "Out of bounds values : N FAILED", a
// tool's or launcher's error line) gives records with status "fail" and the line as the reason.
// When the output does not say how many ranks ran, params.ranks is "unknown" and world (which the
// schema requires) is only a placeholder 1: reports label such records "ranks unknown".
#include <filesystem>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rocebench/common/errors.hpp"
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
  bool lenient = false;   // skip a bad row (listed in Imported::skipped) instead of refusing the file
};

// What an importer read: the records, and facts about the source for the import event.
struct Imported {
  std::vector<ResultRecord> results;
  json details = json::object();
  std::vector<std::string> skipped;  // lenient: "file:line: why" of each row left out
};

// A table row that is not what the tool prints: cut short, run into the next, a non-number or an
// impossible value. Bad input (exit 2); with ImportOptions::lenient the row is skipped and listed.
class RowError : public InputError {
 public:
  using InputError::InputError;
};

// What a number in a row must be: any finite number, not negative, or a size or count (whole, not
// negative, below 2^63).
enum class Bound { any, non_negative, whole };

// The number `token` of `column`, or RowError naming file, line and column: not a finite number
// ("N/A", "inf", "flo" of a cut row), or outside `bound`.
double row_number(const std::string& file, int line, const std::string& column, std::string_view token, Bound bound);

// Reads one row with `read`; a RowError it throws stands, or with options.lenient skips the row
// and lists it in out.skipped.
void read_row(Imported& out, const ImportOptions& options, const std::function<void()>& read);

// The failure `line` reports, or "" when none: one of the tool's `markers` (its own error
// messages), or an MPI launcher's abort or crash report.
std::string failure_in(std::string_view line, std::span<const std::string_view> markers);

// Marks records[from..] failed for `reason` (kept beside any reason they already have).
void mark_failed(std::vector<ResultRecord>& records, std::size_t from, const std::string& reason);

// The output does not say how many ranks ran: params say so, and world is the schema's placeholder.
void mark_ranks_unknown(ResultRecord& r);

// Each throws InputError naming the file and line when the text is not what the tool prints.
Imported parse_perftest(const std::string& text, const std::string& file, const ImportOptions& options);
Imported parse_nccl_tests(const std::string& text, const std::string& file, const ImportOptions& options);
Imported parse_osu(const std::string& text, const std::string& file, const ImportOptions& options);

// Reads `file` with the importer of `tool` and returns the records to append: an import event
// (details.skipped_rows lists what --lenient left out), then the results. Every record is checked
// against the result schema.
std::vector<json> import_file(const std::string& tool, const std::filesystem::path& file, const ImportOptions& options);

// Refuses (InputError naming the file and line) to append records to `file` when it exists and is
// not a results file: its first or last complete line is not a rocebench record. An empty or absent
// file is fine. Returns true when the file ends in the middle of a line (a writer that died), so
// that the caller starts on a new line.
bool check_results_file_for_append(const std::filesystem::path& file);

// Splits text into lines, keeping their 1-based numbers.
std::vector<std::pair<int, std::string>> numbered_lines(const std::string& text);

}  // namespace rocebench::reports
