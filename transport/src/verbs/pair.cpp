#include "rocebench/transport/verbs/pair.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"

namespace rocebench::verbs {

namespace {

[[noreturn]] void failed(const std::string& what, int err) {
  throw InfraError(fmt::format("{}: {}", what, std::strerror(err)));
}

template <typename T>
T* must(T* p, const char* what) {
  if (!p) failed(what, errno);
  return p;
}

rdma_event_channel* nonblocking_channel() {
  rdma_event_channel* channel = must(::rdma_create_event_channel(), "rdma_create_event_channel");
  ::fcntl(channel->fd, F_SETFL, ::fcntl(channel->fd, F_GETFL) | O_NONBLOCK);
  return channel;
}

}  // namespace

// rdma_cm closes the device context with its last id: everything made on it goes first.
RcPair::~RcPair() {
  for (auto* id : ids_) {
    ::rdma_disconnect(id);
    ::rdma_destroy_qp(id);
  }
  if (ids_.empty()) {
    for (auto* qp : qps_) ::ibv_destroy_qp(qp);
  }
  if (send_cq_) ::ibv_destroy_cq(send_cq_);
  if (recv_cq_) ::ibv_destroy_cq(recv_cq_);
  port_.reset();
  for (auto* id : ids_) ::rdma_destroy_id(id);
  if (channel_ && owns_channel_) ::rdma_destroy_event_channel(channel_);
}

void RcPair::open(std::unique_ptr<OpenPort> port) {
  port_ = std::move(port);
  const int depth = static_cast<int>(std::max<std::uint32_t>(o_.depth, 16)) * o_.qps;
  send_cq_ = must(::ibv_create_cq(port_->context(), depth, nullptr, nullptr, 0), "ibv_create_cq");
  recv_cq_ = must(::ibv_create_cq(port_->context(), depth, nullptr, nullptr, 0), "ibv_create_cq");
}

// `create` (true when the QP was made) called with the inline bytes asked for, and again with none
// where the device refuses them; the inline bytes granted.
template <typename Create>
std::uint32_t RcPair::create_qp(const char* what, Create create) {
  ibv_qp_init_attr a = rc_qp_init_attr(send_cq_, recv_cq_, o_.depth, o_.max_inline);
  if (!create(a)) {
    a = rc_qp_init_attr(send_cq_, recv_cq_, o_.depth, 0);
    if (!create(a)) failed(what, errno);
  }
  return a.cap.max_inline_data;
}

// A QP on `id` (the first opens the port rdma_cm chose), connected: rdma_connect when `active`, else
// rdma_accept of the peer's request.
void RcPair::connect_cm_qp(rdma_cm_id* id, bool active) {
  if (!port_) open(std::make_unique<OpenPort>(id->verbs, id->port_num));
  max_inline_ = create_qp("rdma_create_qp",
                          [&](ibv_qp_init_attr& a) { return ::rdma_create_qp(id, port_->pd(), &a) == 0; });
  qps_.push_back(id->qp);
  rdma_conn_param param{};
  param.responder_resources = param.initiator_depth = static_cast<std::uint8_t>(o_.max_rd_atomic);
  param.retry_count = 7;
  param.rnr_retry_count = 7;
  if (active ? ::rdma_connect(id, &param) : ::rdma_accept(id, &param)) {
    failed(active ? "rdma_connect" : "rdma_accept", errno);
  }
  expect_event(RDMA_CM_EVENT_ESTABLISHED);
}

rdma_cm_id* RcPair::expect_event(int wanted_event) const {
  const auto wanted = static_cast<rdma_cm_event_type>(wanted_event);
  const Deadline deadline(o_.wait);
  while (true) {
    rdma_cm_event* ev = nullptr;
    if (::rdma_get_cm_event(channel_, &ev) == 0) {
      const rdma_cm_event_type got = ev->event;
      rdma_cm_id* id = ev->id;
      const int status = ev->status;
      ::rdma_ack_cm_event(ev);
      if (got != wanted) {
        throw InfraError(fmt::format("rdma_cm with {}: expected {}, got {} (status {})", o_.peer,
                                     ::rdma_event_str(wanted), ::rdma_event_str(got), status));
      }
      return id;
    }
    if (errno != EAGAIN) failed("rdma_get_cm_event", errno);
    pollfd p{channel_->fd, POLLIN, 0};
    if (::poll(&p, 1, deadline.remaining_ms()) == 0) {
      throw DeadlineExceeded(fmt::format("rdma_cm with {}: no {} within {} ms", o_.peer, ::rdma_event_str(wanted),
                                         o_.wait.count()));
    }
  }
}

std::unique_ptr<RcPair> connect_oob(int fd, const VerbsOptions& device, const std::string& address,
                                    const PairOptions& options, const Deadline& deadline) {
  std::unique_ptr<RcPair> pair(new RcPair(options));
  pair->open(std::make_unique<OpenPort>(device, address, "this host"));
  std::mt19937 rng(std::random_device{}());
  std::vector<RcEndpoint> mine;
  for (int q = 0; q < options.qps; ++q) {
    ibv_qp* qp = nullptr;
    pair->max_inline_ = pair->create_qp("ibv_create_qp", [&](ibv_qp_init_attr& a) {
      return (qp = ::ibv_create_qp(pair->port_->pd(), &a)) != nullptr;
    });
    pair->qps_.push_back(qp);
    rc_to_init(qp, pair->port_->port());
    RcEndpoint me{.qpn = qp->qp_num, .psn = static_cast<std::uint32_t>(rng() & 0xffffff)};
    std::memcpy(me.gid, pair->port_->gid().raw, 16);
    mine.push_back(me);
  }
  std::vector<RcEndpoint> theirs(mine.size());
  tcp::send_all(fd, mine.data(), mine.size() * sizeof(RcEndpoint), deadline);
  tcp::recv_all(fd, theirs.data(), theirs.size() * sizeof(RcEndpoint), deadline);
  const OpenPort& port = *pair->port_;
  for (std::size_t q = 0; q < mine.size(); ++q) {
    rc_to_rts(pair->qps_[q], port.port(), port.gid_index(), port.attributes().active_mtu, mine[q].psn, theirs[q],
              device.tos, options.max_rd_atomic, kProbeAckTimeout);
  }
  return pair;
}

std::unique_ptr<RcPair> connect_cm(const std::string& host, int port, const VerbsOptions& device,
                                   const PairOptions& options) {
  std::unique_ptr<RcPair> pair(new RcPair(options));
  pair->channel_ = nonblocking_channel();
  pair->owns_channel_ = true;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), nullptr, &found) != 0 || !found) {
    throw InputError(fmt::format("cannot resolve '{}'", host));
  }
  const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> ai(found, ::freeaddrinfo);
  const int resolve_ms = static_cast<int>(std::min<std::int64_t>(options.wait.count(), 60000));
  for (int q = 0; q < options.qps; ++q) {
    rdma_cm_id* id = nullptr;
    if (::rdma_create_id(pair->channel_, &id, nullptr, RDMA_PS_TCP)) failed("rdma_create_id", errno);
    pair->ids_.push_back(id);
    if (device.tos >= 0) {
      std::uint8_t tos = static_cast<std::uint8_t>(device.tos);
      ::rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof tos);
    }
    if (::rdma_resolve_addr(id, nullptr, ai->ai_addr, resolve_ms)) failed("rdma_resolve_addr", errno);
    pair->expect_event(RDMA_CM_EVENT_ADDR_RESOLVED);
    if (::rdma_resolve_route(id, resolve_ms)) failed("rdma_resolve_route", errno);
    pair->expect_event(RDMA_CM_EVENT_ROUTE_RESOLVED);
    pair->connect_cm_qp(id, true);
  }
  return pair;
}

CmListener::CmListener(const std::string& address, int port, int backlog) {
  channel_ = nonblocking_channel();
  if (::rdma_create_id(channel_, &listener_, nullptr, RDMA_PS_TCP)) failed("rdma_create_id", errno);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(static_cast<std::uint16_t>(port));
  if (!address.empty() && address != "0.0.0.0") ::inet_pton(AF_INET, address.c_str(), &sin.sin_addr);
  if (::rdma_bind_addr(listener_, reinterpret_cast<sockaddr*>(&sin))) failed("rdma_bind_addr", errno);
  if (::rdma_listen(listener_, backlog)) failed("rdma_listen", errno);
}

CmListener::~CmListener() {
  if (listener_) ::rdma_destroy_id(listener_);
  if (channel_) ::rdma_destroy_event_channel(channel_);
}

std::unique_ptr<RcPair> CmListener::accept(const PairOptions& options) {
  std::unique_ptr<RcPair> pair(new RcPair(options));
  pair->channel_ = channel_;
  for (int q = 0; q < options.qps; ++q) {
    rdma_cm_id* id = pair->expect_event(RDMA_CM_EVENT_CONNECT_REQUEST);
    pair->ids_.push_back(id);
    pair->connect_cm_qp(id, false);
  }
  return pair;
}

}  // namespace rocebench::verbs
