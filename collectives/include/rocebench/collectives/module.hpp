#pragma once
// What the collectives module offers the harness: its subcommands and its plan steps.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::collectives {

std::vector<Subcommand> subcommands();
// A model's gradient tensors in the order backward makes them final, as element counts; the models
// module provides it (collectives knows no model). Throws InputError for an unknown model.
using GradientSizes = std::function<std::vector<std::size_t>(const std::string& model)>;
std::vector<StepKind> steps(const GradientSizes& gradient_sizes);

}  // namespace rocebench::collectives
