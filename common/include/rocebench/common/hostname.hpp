#pragma once
#include <string>

namespace rocebench {

// This host's name as records carry it ("localhost" if the system has none).
std::string this_hostname();

}  // namespace rocebench
