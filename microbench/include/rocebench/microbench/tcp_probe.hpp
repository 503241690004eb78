#pragma once
// The TCP twin of the verbs probes: latency ping-pong (TCP_NODELAY) and streaming bandwidth.
#include <chrono>
#include <memory>
#include <string>

#include "rocebench/microbench/driver.hpp"

namespace rocebench::microbench {

struct TcpOptions {
  std::string test = "lat";  // lat | bw
  // busy: non-blocking recv spin (perftest's default polling); blocking: sleep in recv.
  // Empty = busy for lat, blocking for bw (as iperf3 does).
  std::string mode;
  std::chrono::milliseconds wait{30000};  // the deadline of every single wait
  int tos = -1;  // the IP ToS byte of this side's packets (IP_TOS: DSCP << 2 | ECN bits); -1 = the kernel's
};

// Validates test and mode; throws UsageError.
TcpOptions checked(TcpOptions o);

// Client: connects to host:port before the deadline and says which test it runs.
std::unique_ptr<Probe> tcp_connect(const std::string& host, int port, const TcpOptions& options);
// Server: waits on a listening socket for one client (gives up after options.wait).
std::unique_ptr<Probe> tcp_accept(int listen_fd, const TcpOptions& options);

}  // namespace rocebench::microbench
