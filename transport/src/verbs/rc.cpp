#include "rocebench/transport/verbs/rc.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/verbs/device.hpp"

namespace rocebench::verbs {

namespace {

[[noreturn]] void failed(const char* what, int err) { throw InfraError(fmt::format("{}: {}", what, std::strerror(err))); }

}  // namespace

std::vector<std::string> device_names() {
  int n = 0;
  ibv_device** list = ::ibv_get_device_list(&n);
  std::vector<std::string> names;
  for (int i = 0; list && i < n; ++i) names.emplace_back(::ibv_get_device_name(list[i]));
  if (list) ::ibv_free_device_list(list);
  return names;
}

std::string choose_device(const std::string& name) {
  const std::vector<std::string> names = device_names();
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end()) {
    throw InputError(fmt::format("unknown RDMA device '{}'; this host has: {}", name,
                                 names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
  }
  if (names.empty()) return {};
  return name.empty() ? names.front() : name;
}

ibv_context* open_device(const std::string& name) {
  const std::string chosen = choose_device(name);
  if (chosen.empty()) return nullptr;
  int n = 0;
  ibv_device** list = ::ibv_get_device_list(&n);
  ibv_device* device = nullptr;
  for (int i = 0; list && i < n && !device; ++i) {
    if (chosen == ::ibv_get_device_name(list[i])) device = list[i];
  }
  ibv_context* context = device ? ::ibv_open_device(device) : nullptr;
  const int err = device ? errno : ENODEV;  // gone since it was listed
  if (list) ::ibv_free_device_list(list);
  if (!context) failed("ibv_open_device", err);
  return context;
}

int mtu_bytes(ibv_mtu mtu) { return 128 << mtu; }

ibv_mtu mtu_of_bytes(int bytes) {
  for (ibv_mtu m : {IBV_MTU_256, IBV_MTU_512, IBV_MTU_1024, IBV_MTU_2048, IBV_MTU_4096}) {
    if (mtu_bytes(m) == bytes) return m;
  }
  return IBV_MTU_1024;
}

ibv_qp_init_attr rc_qp_init_attr(ibv_cq* send_cq, ibv_cq* recv_cq, std::uint32_t depth, std::uint32_t max_inline) {
  ibv_qp_init_attr a{};
  a.send_cq = send_cq;
  a.recv_cq = recv_cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = depth;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = max_inline;
  return a;
}

OpenPort::OpenPort(const VerbsOptions& options, const std::string& address, const std::string& where)
    : owns_context_(true), port_(options.ib_port) {
  device_ = choose_device(options.device);
  if (device_.empty()) throw Unavailable(fmt::format("no RDMA device on {} (ibv_get_device_list found none)", where));
  check_device_port(options.root, device_, port_);
  gid_index_ = choose_gid(read_gids(options.root, device_, port_), options.gid_index, address);
  context_ = open_device(device_);
  try {
    set_up();
    if (attributes_.state != IBV_PORT_ACTIVE) {
      throw InfraError(fmt::format("port {} of {} on {} is not active ({})", port_, device_, where,
                                   ::ibv_port_state_str(attributes_.state)));
    }
    if (const int rc = ::ibv_query_gid(context_, static_cast<std::uint8_t>(port_), gid_index_, &gid_)) {
      failed("ibv_query_gid", rc);
    }
  } catch (...) {
    release();
    throw;
  }
}

OpenPort::OpenPort(ibv_context* context, int port) : context_(context), port_(port) {
  device_ = ::ibv_get_device_name(context->device);
  set_up();
}

void OpenPort::set_up() {
  if (const int rc = ::ibv_query_port(context_, static_cast<std::uint8_t>(port_), &attributes_)) {
    failed("ibv_query_port", rc);
  }
  pd_ = ::ibv_alloc_pd(context_);
  if (!pd_) failed("ibv_alloc_pd", errno);
}

OpenPort::~OpenPort() { release(); }

void OpenPort::release() {
  if (pd_) ::ibv_dealloc_pd(pd_);
  pd_ = nullptr;
  if (owns_context_ && context_) ::ibv_close_device(context_);
  context_ = nullptr;
}

void rc_to_init(ibv_qp* qp, int port) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = static_cast<std::uint8_t>(port);
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
  if (const int rc = ::ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
    failed("ibv_modify_qp INIT", rc);
  }
}

void rc_to_rts(ibv_qp* qp, int port, int gid_index, ibv_mtu mtu, std::uint32_t my_psn, const RcEndpoint& theirs,
               int traffic_class, int max_rd_atomic, int ack_timeout) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = theirs.qpn;
  a.rq_psn = theirs.psn;
  a.max_dest_rd_atomic = static_cast<std::uint8_t>(max_rd_atomic);
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.dlid = theirs.lid;
  std::memcpy(a.ah_attr.grh.dgid.raw, theirs.gid, 16);
  a.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(gid_index);
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.grh.traffic_class = static_cast<std::uint8_t>(std::max(traffic_class, 0));
  a.ah_attr.port_num = static_cast<std::uint8_t>(port);
  if (const int rc = ::ibv_modify_qp(qp, &a,
                                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
    failed("ibv_modify_qp RTR", rc);
  }
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  r.timeout = static_cast<std::uint8_t>(ack_timeout);
  r.retry_cnt = 7;
  r.rnr_retry = 7;
  r.sq_psn = my_psn;
  r.max_rd_atomic = static_cast<std::uint8_t>(max_rd_atomic);
  if (const int rc = ::ibv_modify_qp(qp, &r,
                                     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                         IBV_QP_MAX_QP_RD_ATOMIC)) {
    failed("ibv_modify_qp RTS", rc);
  }
}

}  // namespace rocebench::verbs
