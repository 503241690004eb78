#pragma once
// `rocebench history …` (history_cli.cpp) and its trend pages (history_trends.cpp).
#include "rocebench/common/cli.hpp"

namespace rocebench::reports {

int history_main(const Args& args);
int trends_main(const Args& args);

}  // namespace rocebench::reports
