#pragma once
// The libibverbs steps every RC user repeats: finding and opening a device, and walking a QP from
// RESET to RTS against a peer's QP number, PSN and GID (RoCE: always a global route).
// Shared by the verbs probes (microbench) and the verbs transport (collectives).
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rocebench::verbs {

// The devices libibverbs sees, in its order.
std::vector<std::string> device_names();
// The device `name` (empty = the first) opened; InputError naming the devices there are for an
// unknown name; nullptr when the host has no RDMA device at all.
ibv_context* open_device(const std::string& name);

struct RcEndpoint {
  std::uint32_t qpn = 0;
  std::uint32_t psn = 0;  // 24 bits
  std::uint8_t gid[16] = {};
  std::uint16_t lid = 0;  // 0 on RoCE
};

// RESET -> INIT on `port`, remote write and read allowed.
void rc_to_init(ibv_qp* qp, int port);
// INIT -> RTR -> RTS towards `theirs`; `traffic_class` < 0 keeps the device default.
void rc_to_rts(ibv_qp* qp, int port, int gid_index, ibv_mtu mtu, std::uint32_t my_psn, const RcEndpoint& theirs,
               int traffic_class, int max_rd_atomic);

}  // namespace rocebench::verbs
