#pragma once
// The TCP transport: a full mesh of sockets (optionally several per peer, striping large
// messages) set up through the run's rendezvous.
#include <chrono>
#include <memory>
#include <string>

#include "rocebench/collectives/transport.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::collectives {

struct TcpOptions {
  int sockets_per_peer = 1;
  std::size_t stripe_min_bytes = 256 << 10;  // smaller messages go on one socket
  std::string key_prefix = "tcp";  // rendezvous keys, unique per mesh
  std::chrono::microseconds spin{50};  // how long a wait polls before it sleeps (0: sleep at once)
  std::string congestion;  // TCP congestion control for the mesh's sockets; empty: the host's default
  std::size_t send_buffer = 0;  // SO_SNDBUF for the mesh's sockets; 0: the kernel's autotuning
};

// Ranks [0, world) of the rendezvous, each listening on `address`. `world` may be smaller than the
// run's: the ranks outside it do not call this.
std::unique_ptr<Transport> connect_tcp_mesh(Rendezvous& rendezvous, int rank, int world, const std::string& address,
                                            const std::string& host, const TcpOptions& options,
                                            const Deadline& deadline);

}  // namespace rocebench::collectives
