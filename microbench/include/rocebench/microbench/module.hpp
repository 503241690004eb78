#pragma once
// What the microbench module offers the harness: its subcommands and its plan steps.
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/microbench/hostbench.hpp"

namespace rocebench::microbench {

// sum_kernels: the reduction kernels `probe host` and microbench.host measure next to memcpy (the
// harness passes collectives' own; microbench does not depend on collectives).
std::vector<Subcommand> subcommands();
std::vector<StepKind> steps(std::vector<SumKernel> sum_kernels = {});

}  // namespace rocebench::microbench
