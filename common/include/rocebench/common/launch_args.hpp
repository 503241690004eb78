#pragma once
// How a module command launches its step and where a run's records go (beside cli.hpp, whose every
// change rebuilds the whole tree; these join LauncherFlags there on the next such change).
#include <filesystem>
#include <string>

#include "rocebench/common/cli.hpp"

namespace rocebench {

// Where runs put their folders unless --results says otherwise.
inline constexpr const char* kDefaultResultsRoot = "rocebench-results";

// The launcher flags given, and `ranks` local ranks unless --ranks, --launcher or --hostfile place them.
Args launch_args(const LauncherFlags& launcher, int ranks);

// The value a flag was given in launcher arguments ("--results", "DIR" …), else "".
std::string launch_value(const Args& launch, const std::string& flag);

// Where a run's records go when no harness launched it (a probe client started by hand, netcheck
// judging saved trees): <results>/<run_id>/results.jsonl, the layout of a run's folder. Makes the folder.
std::filesystem::path run_results_file(const std::string& results, const std::string& run_id);

}  // namespace rocebench
