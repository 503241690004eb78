#pragma once
// The verbs transport: one RC QP per peer over libibverbs, set up through the run's rendezvous, and
// the eager ring protocol of flow.hpp (RDMA write with immediate into the peer's registered
// ring, credits back). Algorithms see only the Transport interface.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/transport/transport.hpp"
#include "rocebench/transport/verbs/options.hpp"

namespace rocebench::verbs {

// The ring protocol's geometry (flow.hpp) on top of the device choice.
struct RingOptions : VerbsOptions {
  std::uint32_t slots = 16;            // ring slots per peer and direction
  std::size_t slot_bytes = 256 << 10;  // the largest fragment
  std::string key_prefix = "verbs";    // rendezvous keys, unique per mesh
};

// The plan's "verbs" object of a collectives step (device, ib_port, gid_index, tos, slots,
// slot_bytes): its declarations and their reader.
const OptionTable& ring_option_table();
RingOptions ring_options_from(const json& params);

// What one rank publishes through the rendezvous: its host, port attributes, ring geometry, and per
// peer rank the QP it created for that peer with the address and rkey of the ring that peer writes to.
struct VerbsPeerInfo {
  std::uint32_t qpn = 0, psn = 0;
  std::uint64_t ring_addr = 0;
  std::uint32_t ring_rkey = 0;
};
struct VerbsRankInfo {
  std::string host;
  std::string gid;  // 32 hex digits
  std::uint16_t lid = 0;
  int mtu = 1024;   // active MTU in bytes
  std::uint32_t slots = 0;
  std::uint64_t slot_bytes = 0;
  std::vector<VerbsPeerInfo> peers;  // indexed by rank; this rank's own entry is unused
};

// One line of text; "skip <reason>" stands for a rank without a device.
std::string encode_rank_info(const VerbsRankInfo& info);
// InfraError naming `rank` and what is malformed.
VerbsRankInfo decode_rank_info(const std::string& text, int rank, int world);

// Ranks [0, world) of the rendezvous. `address` is the rank's IP on the run's network, used to pick
// its RoCE v2 GID. Throws Unavailable (on every rank) when any rank has no RDMA device. The rendezvous
// must outlive the transport: an idle wait asks it whether the run lost a rank.
std::unique_ptr<transport::Transport> connect_mesh(Rendezvous& rendezvous, int rank, int world,
                                                   const std::string& address, const std::string& host,
                                                   const RingOptions& options, const Deadline& deadline);

}  // namespace rocebench::verbs
