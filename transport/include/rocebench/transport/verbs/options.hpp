#pragma once
// What every verbs user chooses: the device, port and GID, the traffic class, and the root the
// device facts are read under. The probes (microbench) and the ring transport (mesh.hpp) extend it
// with their own fields.
#include <string>

namespace rocebench::verbs {

struct VerbsOptions {
  std::string device;      // empty = the first RDMA device
  int ib_port = 1;
  int gid_index = -1;      // -1 = the RoCE v2 GID carrying the endpoint's address (with none: the first RoCE v2 GID)
  int tos = -1;            // traffic class (DSCP << 2), e.g. 104 for DSCP 26; -1 = the device default
  std::string root = "/";  // sysfs prefix for the device, port and GID facts
};

}  // namespace rocebench::verbs
