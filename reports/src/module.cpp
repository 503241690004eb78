#include "rocebench/reports/module.hpp"

namespace rocebench::reports {

std::vector<Subcommand> subcommands() {
  return {not_built_yet("report", "render a report from result records", "reports", "issue #6"),
          not_built_yet("compare", "compare two runs and flag regressions", "reports", "issue #6"),
          not_built_yet("import", "turn perftest / nccl-tests / OSU output into records", "reports", "issue #6")};
}

std::vector<StepKind> steps() { return {}; }

}  // namespace rocebench::reports
