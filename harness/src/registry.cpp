// The one place that knows every module: the arrows of DESIGN.md end here.
#include "commands.hpp"
#include "rocebench/collectives/module.hpp"
#include "rocebench/microbench/module.hpp"
#include "rocebench/models/module.hpp"
#include "rocebench/netcheck/module.hpp"
#include "rocebench/reports/module.hpp"

namespace rocebench {

const std::vector<StepKind>& all_step_kinds() {
  static const std::vector<StepKind> kinds = [] {
    std::vector<StepKind> out{rendezvous_step()};
    for (auto&& more : {microbench::steps(), collectives::steps(), models::steps(), netcheck::steps(), reports::steps()}) {
      out.insert(out.end(), more.begin(), more.end());
    }
    return out;
  }();
  return kinds;
}

std::vector<Subcommand> all_subcommands() {
  std::vector<Subcommand> out{{"run", "run a plan: launch the ranks, run its steps, record results", run_main}};
  for (auto&& more : {microbench::subcommands(), collectives::subcommands(), models::subcommands(),
                      netcheck::subcommands(), reports::subcommands()}) {
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace rocebench
