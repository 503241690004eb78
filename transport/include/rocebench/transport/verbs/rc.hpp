#pragma once
// The libibverbs steps every RC user repeats: finding and opening a device and its port with a
// protection domain, creating a QP, and walking it from RESET to RTS against a peer's QP number, PSN
// and GID (RoCE: always a global route).
// Shared by the point-to-point pairs of the verbs probes (pair.hpp) and the ring transport (mesh.hpp).
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

#include "rocebench/transport/verbs/options.hpp"

namespace rocebench::verbs {

// The devices libibverbs sees, in its order.
std::vector<std::string> device_names();
// The device `name` names (empty = the first); InputError naming the devices there are for an
// unknown name; empty when the host has no RDMA device at all.
std::string choose_device(const std::string& name);
// That device opened; nullptr when the host has no RDMA device at all.
ibv_context* open_device(const std::string& name);

// A path MTU in bytes and as libibverbs' enum (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5); a byte count
// that is no MTU gives IBV_MTU_1024.
int mtu_bytes(ibv_mtu mtu);
ibv_mtu mtu_of_bytes(int bytes);

// The attributes of an RC QP with `depth` send and receive WRs of one SGE each, asking for
// `max_inline` inline bytes.
ibv_qp_init_attr rc_qp_init_attr(ibv_cq* send_cq, ibv_cq* recv_cq, std::uint32_t depth, std::uint32_t max_inline = 0);

// A device opened for RC traffic on one port, with a protection domain: what every RC user sets up
// first. Either opened here, or adopted from rdma_cm, whose ids own the context.
class OpenPort {
 public:
  // The device and port `options` name, checked against sysfs under options.root, its GID the one
  // options.gid_index names or else the RoCE v2 GID carrying `address` (empty: the first RoCE v2 GID).
  // `where` names the host in messages ("this host", "host node-a"). Unavailable when the host has no
  // RDMA device; InputError for an unknown device, port or GID; InfraError when the port is not active.
  OpenPort(const VerbsOptions& options, const std::string& address, const std::string& where);
  // rdma_cm's context and port (its route chose the GID): not closed here.
  OpenPort(ibv_context* context, int port);
  ~OpenPort();
  OpenPort(const OpenPort&) = delete;
  OpenPort& operator=(const OpenPort&) = delete;

  ibv_context* context() const { return context_; }
  ibv_pd* pd() const { return pd_; }
  const std::string& device() const { return device_; }
  int port() const { return port_; }
  int gid_index() const { return gid_index_; }  // -1 when adopted from rdma_cm
  const ibv_gid& gid() const { return gid_; }
  const ibv_port_attr& attributes() const { return attributes_; }  // lid, active_mtu, state

 private:
  void set_up();
  void release();
  ibv_context* context_ = nullptr;
  bool owns_context_ = false;
  ibv_pd* pd_ = nullptr;
  std::string device_;
  int port_ = 1;
  int gid_index_ = -1;
  ibv_gid gid_{};
  ibv_port_attr attributes_{};
};

struct RcEndpoint {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // 24 bits
  std::uint8_t gid[16] = {};
  std::uint16_t lid = 0;  // 0 on RoCE
};

// RESET -> INIT on `port`, remote write and read allowed.
void rc_to_init(ibv_qp* qp, int port);
// The local ACK timeout, 4.096 us * 2^N a try. The probes keep perftest's default (14: 67 ms), which
// their figures are compared with. The transport's collectives move windows that can wait behind a
// slow link's queue (or a PFC pause) longer than that: at 2^14 rxe resent multi-packet writes still in
// flight on a shaped bed link and its responder NAKed them as invalid requests. 2^18 (1.07 s) is of the
// order of NCCL's IB timeout.
inline constexpr int kProbeAckTimeout = 14;
inline constexpr int kTransportAckTimeout = 18;

// INIT -> RTR -> RTS towards `theirs`; `traffic_class` < 0 keeps the device default.
void rc_to_rts(ibv_qp* qp, int port, int gid_index, ibv_mtu mtu, std::uint32_t my_psn, const RcEndpoint& theirs,
               int traffic_class, int max_rd_atomic, int ack_timeout);

}  // namespace rocebench::verbs
