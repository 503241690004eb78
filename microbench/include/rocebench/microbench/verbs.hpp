#pragma once
// Verbs probe options: the device choice every verbs user shares (transport/verbs/options.hpp) and
// what only the probes add. The TX depth is the driver's (DriverOptions::tx_depth): it sizes the QPs.
#include <string>

#include "rocebench/transport/verbs/options.hpp"

namespace rocebench::microbench {

struct VerbsProbeOptions : verbs::VerbsOptions {
  std::string address;         // the IP the GID must carry (the CLI's --bind / the rank's address)
  std::string connect = "cm";  // cm (rdma_cm) | oob (QP attributes over the TCP control socket)
  int qps = 1;
  bool bidirectional = false;
  bool validate = false;       // check the received data of every message
  int gpu = -1;                // this side's buffers in GPU N's memory (GPUDirect RDMA); -1 = host memory
};

}  // namespace rocebench::microbench
