#include "rocebench/models/module.hpp"

namespace rocebench::models {

std::vector<Subcommand> subcommands() {
  return {not_built_yet("train", "training throughput (images/sec) of real models", "models", "issue #7")};
}

std::vector<StepKind> steps() { return {}; }

}  // namespace rocebench::models
