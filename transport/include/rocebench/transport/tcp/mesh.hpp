#pragma once
// The TCP transport: a full mesh of sockets (optionally several per peer, striping large
// messages) set up through the run's rendezvous.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/transport/transport.hpp"

namespace rocebench::tcp {

struct MeshOptions {
  int sockets_per_peer = 1;
  std::size_t stripe_min_bytes = 256 << 10;  // smaller messages go on one socket
  std::string key_prefix = "tcp";  // rendezvous keys, unique per mesh
  std::chrono::microseconds spin{50};  // how long a wait polls before it sleeps (0: sleep at once)
  std::string congestion;  // TCP congestion control for the mesh's sockets; empty: the host's default
  // SO_SNDBUF for the mesh's sockets: a size fixes it, 0 leaves it to the kernel's autotuning. Unset,
  // a socket to a peer on the same host gets kSameHostSendBuffer and the others autotuning.
  std::optional<std::size_t> send_buffer;
};

// The TCP mesh's fields in a step's params, beside `transport` (sockets_per_peer, spin_us,
// tcp_congestion, tcp_sndbuf): their declarations and their reader, as verbs' ring_option_table.
const OptionTable& mesh_option_table();
MeshOptions mesh_options_from(const json& params);

// No wire and no bandwidth-delay product to cover between ranks on one host; under BBR this buffer
// raised busbw on loopback 10-37% over autotuning (why is not known: collectives/README.md).
inline constexpr std::size_t kSameHostSendBuffer = 128 << 10;

// Ranks [0, world) of the rendezvous, each listening on `address`. `world` may be smaller than the
// run's: the ranks outside it do not call this. The rendezvous must outlive the transport: an idle wait
// asks it whether the run lost a rank.
std::unique_ptr<transport::Transport> connect_mesh(Rendezvous& rendezvous, int rank, int world,
                                                   const std::string& address, const std::string& host,
                                                   const MeshOptions& options, const Deadline& deadline);

}  // namespace rocebench::tcp
