#pragma once
// What the models module offers the harness: its subcommands and its plan steps.
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::models {

std::vector<Subcommand> subcommands();
std::vector<StepKind> steps();

}  // namespace rocebench::models
