#pragma once
// The libibverbs steps every RC user repeats: finding and opening a device, and walking a QP from
// RESET to RTS against a peer's QP number, PSN and GID (RoCE: always a global route).
// Shared by the verbs probes (microbench) and the ring transport (mesh.hpp).
#include <infiniband/verbs.h>

#include <cstdint>
#include <string>
#include <vector>

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
