#pragma once
// What the netcheck module offers the harness: its subcommands and its plan steps.
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::netcheck {

std::vector<Subcommand> subcommands();
std::vector<StepKind> steps();

// `rocebench netcheck --compare RESULTS...`: the settings that differ between hosts, from their check
// records (results files, run folders or folders of runs); appends the odd hosts out to
// `out`/<run>/results.jsonl when given. Exit 0 all alike, 1 differences.
int compare_main(const std::vector<std::string>& files, const std::string& out);

}  // namespace rocebench::netcheck
