#pragma once

#include <string>
#include <string_view>

namespace rocebench {

// A random hex token (128 bits from /dev/urandom).
std::string random_token();

// A new run id, which names the run's folder: "YYYYMMDD-HHMMSS-xxxxxx" (UTC, six random hex digits),
// after "KIND-" when a kind is given ("probe-…" for a probe client started by hand).
std::string new_run_id(std::string_view kind = "");

}  // namespace rocebench
