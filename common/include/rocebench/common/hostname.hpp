#pragma once
#include <string>

namespace rocebench {

// This host's name as records carry it ("localhost" if the system has none).
std::string this_hostname();

// Whether `name`, as an operator wrote it (hostfile), is this host: its name (any case), or a name or
// address that resolves to a loopback address or to one of this host's own addresses ("localhost",
// "127.0.0.1", its FQDN). A rank started there carries this_hostname() in its records, not `name`.
bool names_this_host(const std::string& name);

}  // namespace rocebench
