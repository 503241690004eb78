#pragma once
// How many ranks a module command starts when its launcher flags do not say (beside cli.hpp, whose
// every change rebuilds the whole tree; it joins LauncherFlags there on the next such change).
#include "rocebench/common/cli.hpp"

namespace rocebench {

// The launcher flags given, and `ranks` local ranks unless --ranks, --launcher or --hostfile place them.
Args launch_args(const LauncherFlags& launcher, int ranks);

}  // namespace rocebench
