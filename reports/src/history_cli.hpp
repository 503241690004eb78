#pragma once
// `rocebench history …` (history_cli.cpp).
#include "rocebench/common/cli.hpp"

namespace rocebench::reports {

int history_main(const Args& args);

}  // namespace rocebench::reports
