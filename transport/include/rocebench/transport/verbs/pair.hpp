#pragma once
// One side of a point-to-point RC connection, as the verbs probes (microbench) run perftest's tests
// on it: a port (rc.hpp's OpenPort), separate send and receive CQs (waiting for one never swallows
// the other) and `qps` QPs connected to the peer's, through rdma_cm or out of band (QP numbers, PSNs
// and GIDs exchanged over a connected TCP socket). What runs on the QPs is the caller's.
#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rocebench/common/clock.hpp"
#include "rocebench/transport/verbs/options.hpp"
#include "rocebench/transport/verbs/rc.hpp"

struct rdma_cm_id;
struct rdma_event_channel;

namespace rocebench::verbs {

struct PairOptions {
  int qps = 1;
  std::uint32_t depth = 128;       // send and receive WRs per QP; each CQ holds max(depth, 16) per QP
  std::uint32_t max_inline = 0;    // inline bytes asked for; 0 where the device refuses them
  int max_rd_atomic = 16;          // RDMA reads in flight per QP, each way
  std::chrono::milliseconds wait{10000};  // each rdma_cm event's deadline (address and route: at most 60 s)
  std::string peer;                // as messages name it
};

class RcPair {
 public:
  ~RcPair();  // the user's memory registrations on port().pd() go first
  RcPair(const RcPair&) = delete;
  RcPair& operator=(const RcPair&) = delete;

  const OpenPort& port() const { return *port_; }
  ibv_cq* send_cq() const { return send_cq_; }
  ibv_cq* recv_cq() const { return recv_cq_; }
  const std::vector<ibv_qp*>& qps() const { return qps_; }
  std::uint32_t max_inline() const { return max_inline_; }  // as granted

 private:
  friend std::unique_ptr<RcPair> connect_oob(int, const VerbsOptions&, const std::string&, const PairOptions&,
                                             const Deadline&);
  friend std::unique_ptr<RcPair> connect_cm(const std::string&, int, const VerbsOptions&, const PairOptions&);
  friend class CmListener;
  explicit RcPair(const PairOptions& options) : o_(options) {}
  void open(std::unique_ptr<OpenPort> port);
  template <typename Create>
  std::uint32_t create_qp(const char* what, Create create);
  void connect_cm_qp(rdma_cm_id* id, bool active);
  rdma_cm_id* expect_event(int wanted) const;

  PairOptions o_;
  std::unique_ptr<OpenPort> port_;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  std::vector<ibv_qp*> qps_;
  std::uint32_t max_inline_ = 0;
  rdma_event_channel* channel_ = nullptr;
  bool owns_channel_ = false;  // an accepted pair's channel is its listener's
  std::vector<rdma_cm_id*> ids_;
};

// Out of band: the device `device` names opened here on its port, the RoCE v2 GID carrying `address`
// (or device.gid_index), and the QPs' facts exchanged over `fd`, a TCP connection to the peer, which
// calls this too. Unavailable when the host has no RDMA device; InputError for an unknown device,
// port or GID index.
std::unique_ptr<RcPair> connect_oob(int fd, const VerbsOptions& device, const std::string& address,
                                    const PairOptions& options, const Deadline& deadline);
// rdma_cm's active side: `qps` connections to a CmListener at host:port, device.tos on each; rdma_cm
// chooses the device, port and GID from the route.
std::unique_ptr<RcPair> connect_cm(const std::string& host, int port, const VerbsOptions& device,
                                   const PairOptions& options);

// rdma_cm's passive side: listens on address:port (empty or 0.0.0.0: every address) and accepts the
// `qps` connections of one peer at a time. It must outlive the pairs it accepted (their channel).
class CmListener {
 public:
  CmListener(const std::string& address, int port, int backlog);
  ~CmListener();
  CmListener(const CmListener&) = delete;
  CmListener& operator=(const CmListener&) = delete;
  std::unique_ptr<RcPair> accept(const PairOptions& options);

 private:
  rdma_event_channel* channel_ = nullptr;
  rdma_cm_id* listener_ = nullptr;
};

}  // namespace rocebench::verbs
