#include "rocebench/collectives/module.hpp"

namespace rocebench::collectives {

std::vector<Subcommand> subcommands() {
  return {not_built_yet("allreduce", "ring allreduce / parameter-server / NCCL sweeps", "collectives", "issue #4")};
}

std::vector<StepKind> steps() { return {}; }

}  // namespace rocebench::collectives
