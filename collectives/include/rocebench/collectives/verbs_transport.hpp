#pragma once
// The verbs transport: one RC QP per peer over libibverbs, set up through the run's rendezvous, and
// the eager ring protocol of verbs_flow.hpp (RDMA write with immediate into the peer's registered
// ring, credits back). Algorithms see only the Transport interface.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "rocebench/collectives/transport.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::collectives {

struct VerbsOptions {
  std::string device;     // empty = the first RDMA device
  int ib_port = 1;
  int gid_index = -1;     // -1 = the RoCE v2 GID carrying the rank's address (any RoCE v2 GID for loopback)
  int tos = -1;           // traffic class (DSCP << 2); -1 = the device default
  std::uint32_t slots = 16;               // ring slots per peer and direction
  std::size_t slot_bytes = 256 << 10;     // the largest fragment
  std::string root = "/";                 // sysfs prefix for the GID table
  std::string key_prefix = "verbs";       // rendezvous keys, unique per mesh
};

// The plan's "verbs" object of a collectives step (device, ib_port, gid_index, tos, slots,
// slot_bytes): its declarations and their reader.
const OptionTable& verbs_option_table();
VerbsOptions verbs_options_from(const json& params);

// Thrown on every rank of the mesh when one of them has no RDMA device; the reason names it.
class TransportUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

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
// its RoCE v2 GID. Throws TransportUnavailable (on every rank) when any rank has no RDMA device.
std::unique_ptr<Transport> connect_verbs_mesh(Rendezvous& rendezvous, int rank, int world, const std::string& address,
                                              const std::string& host, const VerbsOptions& options,
                                              const Deadline& deadline);

}  // namespace rocebench::collectives
