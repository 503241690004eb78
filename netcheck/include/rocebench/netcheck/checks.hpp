#pragma once
// Judges a host's state against a profile. Each check has a stable id; see kCheckIds.
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/netcheck/host_state.hpp"
#include "rocebench/netcheck/profile.hpp"

namespace rocebench::netcheck {

// Every check id netcheck emits, in the order it emits them for a port.
extern const std::vector<std::string> kCheckIds;

std::vector<CheckRecord> run_checks(const HostState& host, const Profile& profile);

}  // namespace rocebench::netcheck
