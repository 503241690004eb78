#pragma once
// Baselines: the expected metrics of a machine type, as a JSON file that `rocebench compare
// --write-baseline` writes from a run and that `report --baseline` / `compare` judge runs against.
// One file may hold several machine types. Its schema is reports/schema/baseline.schema.json.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/reports/compare.hpp"

namespace rocebench::reports {

inline constexpr const char* kBaselineSchema = "rocebench.baseline/1";

// Adds (or replaces) `machine` in `file`, keeping the other machine types already there.
void write_baseline(const std::filesystem::path& file, const std::string& machine, const EvidenceMap& evidence,
                    const std::vector<std::string>& sources);

// The evidence stored for `machine`; with an empty machine, the file's only machine type.
// Throws InputError (file, line, field) when the file is not a valid baseline.
EvidenceMap read_baseline(const std::filesystem::path& file, const std::string& machine);

// Whether a file is a baseline (a JSON object naming the baseline schema) rather than results.
bool is_baseline_file(const std::filesystem::path& file);

}  // namespace rocebench::reports
