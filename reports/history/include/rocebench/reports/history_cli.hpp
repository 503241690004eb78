#pragma once
// `rocebench history …` (history_cli.cpp) and its trend pages (history_trends.cpp): the history
// room's subcommands, which the cli room registers.
#include "rocebench/common/cli.hpp"

namespace rocebench::reports {

int history_main(const Args& args);
int trends_main(const Args& args);

}  // namespace rocebench::reports
