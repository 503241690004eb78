#pragma once
// Verbs probe options.
#include <string>
#include <vector>

#include "rocebench/common/verbs_device.hpp"

namespace rocebench::microbench {

struct VerbsOptions {
  std::string device;          // empty = the first device
  int ib_port = 1;
  int gid_index = -1;          // -1 = the RoCE v2 GID carrying `address` (else the first RoCE v2 GID)
  std::string address;         // the IP the GID must carry (the CLI's --bind / the rank's address)
  std::string connect = "cm";  // cm (rdma_cm) | oob (QP attributes over the TCP control socket)
  int tos = -1;                // traffic class (DSCP << 2), e.g. 104 for DSCP 26; -1 = the device default
  int tx_depth = 128;
  int qps = 1;
  bool bidirectional = false;
  bool validate = false;       // check the received data of every message
  int gpu = -1;                // this side's buffers in GPU N's memory (GPUDirect RDMA); -1 = host memory
  std::string root = "/";      // sysfs prefix
};

// Device, port and GID choice live in common (shared with the collectives' verbs transport).
using verbs::check_device_port;
using verbs::choose_gid;
using verbs::gid_of_ip;
using verbs::GidEntry;
using verbs::list_devices;
using verbs::list_ports;
using verbs::read_gids;

}  // namespace rocebench::microbench
