#include "rocebench/microbench/module.hpp"

namespace rocebench::microbench {

std::vector<Subcommand> subcommands() {
  return {not_built_yet("probe", "verbs and TCP latency / bandwidth probes, all-pairs matrix", "microbench", "issue #3")};
}

std::vector<StepKind> steps() { return {}; }

}  // namespace rocebench::microbench
