#include "rocebench/netcheck/module.hpp"

namespace rocebench::netcheck {

std::vector<Subcommand> subcommands() {
  return {not_built_yet("netcheck", "RoCE lossless-configuration checks against a profile", "netcheck", "issue #5")};
}

std::vector<StepKind> steps() { return {}; }

}  // namespace rocebench::netcheck
