#pragma once
// What the microbench module offers the harness: its subcommands and its plan steps.
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::microbench {

std::vector<Subcommand> subcommands();
std::vector<StepKind> steps();

}  // namespace rocebench::microbench
