#pragma once
// What the reports module offers the harness: its subcommands (it runs no plan step: it reads what
// the steps recorded).
#include <vector>

#include "rocebench/common/cli.hpp"

namespace rocebench::reports {

std::vector<Subcommand> subcommands();

}  // namespace rocebench::reports
