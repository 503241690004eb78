#pragma once
// The verbs RC tests behind the Probe interface (libibverbs + librdmacm).
#include <memory>
#include <string>

#include "rocebench/microbench/probe.hpp"

namespace rocebench::microbench {

json verbs_params(const ProbeSpec& spec);
// The RDMA device the probes of this spec open (the named one, else the first); throws Unavailable
// when this host has none.
std::string verbs_device(const ProbeSpec& spec);
// Both throw Unavailable when this host has no RDMA device, InputError for an unknown
// device, port or GID index (listing what exists).
std::unique_ptr<ProbeServer> verbs_listen(const ProbeSpec& spec, const std::string& address, int port);
std::unique_ptr<Probe> verbs_connect(const ProbeSpec& spec, const std::string& host, int port);

}  // namespace rocebench::microbench
