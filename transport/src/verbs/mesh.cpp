// Verbs transport: one RC QP per peer, one CQ with a completion channel, and one registered block
// holding every peer's staging ring and receive ring. Progress is made by whoever waits: poll the
// CQ, copy arrived fragments into posted receives, hand credits back, write what credits allow.
//
// Why copy through rings rather than register the caller's buffers: the sweep and the algorithms
// hand over a fresh std::vector per size and per chunk, so a registration cache would miss and pay
// ibv_reg_mr (page pinning, milliseconds for hundreds of MiB) per message, and a zero-copy write
// needs a rendezvous round trip per message to learn the remote address. The rings are registered
// once, the copy runs at memory speed (well above a RoCE link per core), and the sender never waits
// for the receiver to post: eager, like the TCP transport's socket buffers.
#include "rocebench/transport/verbs/mesh.hpp"

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <random>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"
#include "rocebench/transport/verbs/flow.hpp"
#include "rocebench/transport/verbs/rc.hpp"
#include "../lost_peers.hpp"

namespace rocebench::verbs {

namespace {

constexpr std::uint32_t kCreditFlag = 0x80000000u;  // immediate = credits returned, else fragment bytes
constexpr std::uint64_t kReceiveTag = 1ull << 32;     // in wr_id, beside the peer's rank
constexpr int kSpinsBeforeSleep = 2000;             // then block on the completion channel

[[noreturn]] void verbs_failed(const std::string& what, int err) {
  throw InfraError(fmt::format("{}: {}", what, std::strerror(err)));
}

std::string hex(const std::uint8_t* raw, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out += fmt::format("{:02x}", raw[i]);
  return out;
}

bool is_loopback(const std::string& address) { return address.rfind("127.", 0) == 0 || address == "::1"; }

struct Peer {
  int rank = -1;
  std::string host;
  ibv_qp* qp = nullptr;
  std::unique_ptr<RingFlow> flow;
  char* staging = nullptr;  // this peer's staging ring in the registered block
  std::uint64_t remote_ring = 0;
  std::uint32_t remote_rkey = 0;
  std::uint32_t send_queue_used = 0;
  std::string broken;  // why the QP failed; the peer is reported when anything still needs it
};

class VerbsTransport final : public transport::Transport {
 public:
  VerbsTransport(Rendezvous& rendezvous, int rank, int world, const RingOptions& options)
      : rank_(rank), world_(world), options_(options), lost_peers_(rendezvous, rank, "verbs") {}
  ~VerbsTransport() override {
    for (auto& p : peers_) {
      if (p.qp) ::ibv_destroy_qp(p.qp);
    }
    if (mr_) ::ibv_dereg_mr(mr_);
    if (cq_) {
      if (unacked_events_) ::ibv_ack_cq_events(cq_, unacked_events_);
      ::ibv_destroy_cq(cq_);
    }
    if (channel_) ::ibv_destroy_comp_channel(channel_);
    port_.reset();
  }
  VerbsTransport(const VerbsTransport&) = delete;
  VerbsTransport& operator=(const VerbsTransport&) = delete;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "verbs"; }

  transport::Request send(int peer, const void* data, std::size_t bytes) override {
    Peer& p = peer_of(peer);
    const transport::Request id = next_request_++;
    pending_[id] = peer;
    p.flow->post_send(id, static_cast<const char*>(data), bytes);
    return id;
  }
  transport::Request recv(int peer, void* data, std::size_t bytes) override {
    Peer& p = peer_of(peer);
    const transport::Request id = next_request_++;
    pending_[id] = peer;
    p.flow->post_recv(id, static_cast<char*>(data), bytes);
    return id;
  }

  void wait(std::span<const transport::Request> requests, const Deadline& deadline) override {
    int idle = 0;
    while (true) {
      const bool moved = progress();
      std::set<int> owed;
      for (transport::Request r : requests) {
        if (const auto it = pending_.find(r); it != pending_.end()) owed.insert(it->second);
      }
      if (owed.empty()) return;
      for (int peer : owed) {
        if (!peers_[peer].broken.empty()) lost(peers_[peer]);
      }
      if (moved) {
        idle = 0;
        continue;
      }
      auto owed_names = [&] {
        std::vector<std::string> names;
        for (int peer : owed) names.push_back(fmt::format("rank {} on host {}", peer, peers_[peer].host));
        return fmt::format("{}", fmt::join(names, ", "));
      };
      if (deadline.expired()) {
        std::vector<std::string> lost;
        // A peer lost further along (the ring's next rank) is often why the one we wait for went quiet.
        for (const Peer& p : peers_) {
          if (!p.broken.empty()) lost.push_back(fmt::format("; rank {} on host {} is lost: {}", p.rank, p.host, p.broken));
        }
        throw DeadlineExceeded(fmt::format("rank {}: verbs transport: deadline passed with transfers pending to/from {}{}",
                                           rank_, owed_names(), fmt::join(lost, "")));
      }
      if (++idle > kSpinsBeforeSleep) {
        lost_peers_.check(owed_names);
        sleep_until_completion(deadline);
      }
    }
  }

  // Set up by connect_mesh.
  void open(const std::string& address, const std::string& host) {
    port_ = std::make_unique<OpenPort>(options_, is_loopback(address) ? std::string() : address,
                                       fmt::format("host {}", host));
    mine_.host = host;
    mine_.lid = port_->attributes().lid;
    mine_.mtu = mtu_bytes(port_->attributes().active_mtu);
    mine_.slots = options_.slots;
    mine_.slot_bytes = options_.slot_bytes;
    mine_.gid = hex(port_->gid().raw, 16);

    channel_ = must(::ibv_create_comp_channel(port_->context()), "ibv_create_comp_channel");
    const std::uint32_t depth = queue_depth();
    cq_ = must(::ibv_create_cq(port_->context(), static_cast<int>(2 * depth * static_cast<std::uint32_t>(world_)),
                               nullptr, channel_, 0),
               "ibv_create_cq");

    // Per peer: [staging ring | receive ring], one registration for all.
    const std::size_t ring_bytes = std::size_t{options_.slots} * options_.slot_bytes;
    const std::size_t memory_bytes = 2 * ring_bytes * static_cast<std::size_t>(world_);
    try {
      memory_ = HostBuffer(memory_bytes);
    } catch (const std::bad_alloc&) {
      verbs_failed(fmt::format("mmap of {} bytes of rings", memory_bytes), ENOMEM);
    }
    mr_ = must(::ibv_reg_mr(port_->pd(), memory_.data(), memory_.size(),
                            IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE),
               "ibv_reg_mr");

    std::mt19937 rng(std::random_device{}());
    peers_.resize(static_cast<std::size_t>(world_));
    mine_.peers.resize(static_cast<std::size_t>(world_));
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      Peer& p = peers_[r];
      p.rank = r;
      char* staging = memory_.data() + 2 * ring_bytes * static_cast<std::size_t>(r);
      char* ring = staging + ring_bytes;
      p.staging = staging;
      p.flow = std::make_unique<RingFlow>(options_.slots, options_.slot_bytes, staging, ring);
      ibv_qp_init_attr a = rc_qp_init_attr(cq_, cq_, depth);
      p.qp = must(::ibv_create_qp(port_->pd(), &a), "ibv_create_qp");
      rc_to_init(p.qp, options_.ib_port);
      for (std::uint32_t i = 0; i < depth; ++i) post_receive(p);
      mine_.peers[r] = {p.qp->qp_num, static_cast<std::uint32_t>(rng() & 0xffffff),
                        reinterpret_cast<std::uintptr_t>(ring), mr_->rkey};
    }
  }

  const VerbsRankInfo& mine() const { return mine_; }

  void connect(const std::vector<VerbsRankInfo>& all) {
    std::uint8_t gid[16];
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const VerbsRankInfo& theirs = all[r];
      if (theirs.slots != mine_.slots || theirs.slot_bytes != mine_.slot_bytes) {
        throw InputError(fmt::format("rank {} on host {} uses {} ring slots of {} bytes, rank {} on host {} uses {} of {}",
                                     r, theirs.host, theirs.slots, theirs.slot_bytes, rank_, mine_.host, mine_.slots,
                                     mine_.slot_bytes));
      }
      Peer& p = peers_[r];
      p.host = theirs.host;
      p.remote_ring = theirs.peers[rank_].ring_addr;
      p.remote_rkey = theirs.peers[rank_].ring_rkey;
      RcEndpoint endpoint;
      endpoint.qpn = theirs.peers[rank_].qpn;
      endpoint.psn = theirs.peers[rank_].psn;
      endpoint.lid = theirs.lid;
      for (int i = 0; i < 16; ++i) gid[i] = static_cast<std::uint8_t>(std::stoi(theirs.gid.substr(2 * i, 2), nullptr, 16));
      std::memcpy(endpoint.gid, gid, 16);
      rc_to_rts(p.qp, options_.ib_port, port_->gid_index(), mtu_of_bytes(std::min(mine_.mtu, theirs.mtu)),
                mine_.peers[r].psn, endpoint, options_.tos, 1, kTransportAckTimeout);
    }
    peers_[rank_].host = mine_.host;
  }

 private:
  template <typename T>
  static T* must(T* p, const char* what) {
    if (!p) verbs_failed(what, errno);
    return p;
  }

  // Receive WQEs per QP: one per slot for data plus one per slot for credit messages (each carries
  // at least one credit, and no more than `slots` credits are ever outstanding).
  std::uint32_t queue_depth() const { return 2 * options_.slots + 2; }

  Peer& peer_of(int peer) {
    if (peer < 0 || peer >= world_ || peer == rank_) throw std::logic_error(fmt::format("bad peer {}", peer));
    Peer& p = peers_[peer];
    if (!p.broken.empty()) lost(p);
    return p;
  }

  [[noreturn]] void lost(const Peer& p) const {
    throw InfraError(fmt::format("rank {}: verbs transport: rank {} on host {} is lost: {}", rank_, p.rank, p.host,
                                 p.broken));
  }

  void post_receive(Peer& p) {
    ibv_recv_wr wr{};  // no scatter list: a write with immediate consumes the WQE, the data is in the ring
    wr.wr_id = static_cast<std::uint64_t>(p.rank) | kReceiveTag;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ::ibv_post_recv(p.qp, &wr, &bad)) verbs_failed("ibv_post_recv", rc);
  }

  // A write with immediate: a fragment from staging into the peer's ring, or (no data) credits.
  void post_write(Peer& p, std::uint32_t slot, std::uint32_t bytes, std::uint32_t imm) {
    const std::size_t offset = std::size_t{slot} * options_.slot_bytes;
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(p.staging + offset), bytes, mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = static_cast<std::uint64_t>(p.rank);
    wr.sg_list = bytes ? &sge : nullptr;
    wr.num_sge = bytes ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(imm);
    wr.wr.rdma.remote_addr = p.remote_ring + offset;
    wr.wr.rdma.rkey = p.remote_rkey;
    ibv_send_wr* bad = nullptr;
    if (const int rc = ::ibv_post_send(p.qp, &wr, &bad)) {
      verbs_failed(fmt::format("rank {}: ibv_post_send to rank {} on host {}", rank_, p.rank, p.host), rc);
    }
    ++p.send_queue_used;
  }

  // One pass over the CQ and every peer; true when anything moved.
  bool progress() {
    bool moved = false;
    ibv_wc wc[32];
    const int n = ::ibv_poll_cq(cq_, 32, wc);
    if (n < 0) throw InfraError(fmt::format("rank {}: verbs transport: polling the completion queue failed", rank_));
    for (int i = 0; i < n; ++i) completion(wc[i]);
    moved = n > 0;
    std::vector<transport::Request> done;
    for (Peer& p : peers_) {
      if (!p.flow || !p.broken.empty()) continue;
      p.flow->deliver(done);
      const std::uint32_t depth = queue_depth();
      if (p.send_queue_used < depth) {
        if (const std::uint32_t credits = p.flow->take_credits()) {
          post_write(p, 0, 0, kCreditFlag | credits);
          moved = true;
        }
      }
      while (p.send_queue_used < depth) {
        const auto f = p.flow->next_fragment(done);
        if (!f) break;
        post_write(p, f->slot, f->bytes, f->bytes);
        moved = true;
      }
    }
    for (transport::Request r : done) pending_.erase(r);
    return moved || !done.empty();
  }

  void completion(const ibv_wc& wc) {
    // wr_id, unlike opcode, is valid in failed completions too.
    const bool is_receive = wc.wr_id & kReceiveTag;
    Peer& p = peers_[static_cast<std::size_t>(wc.wr_id & ~kReceiveTag)];
    if (wc.status != IBV_WC_SUCCESS) {
      // A flush only follows the failure that caused it; keep the first, most telling reason.
      if (p.broken.empty() || wc.status != IBV_WC_WR_FLUSH_ERR) {
        p.broken = fmt::format("{} of a {} failed: {} (vendor error {:#x})", is_receive ? "receive" : "write",
                               is_receive ? "message" : "fragment", ::ibv_wc_status_str(wc.status), wc.vendor_err);
      }
      return;
    }
    if (!is_receive) {
      --p.send_queue_used;
      return;
    }
    const std::uint32_t imm = ntohl(wc.imm_data);
    if (imm & kCreditFlag) p.flow->credits_returned(imm & ~kCreditFlag);
    else p.flow->fragment_arrived(imm);
    post_receive(p);
  }

  void sleep_until_completion(const Deadline& deadline) {
    if (::ibv_req_notify_cq(cq_, 0)) throw InfraError("ibv_req_notify_cq failed");
    if (progress()) return;  // a completion that raced the arming
    pollfd fd{channel_->fd, POLLIN, 0};
    if (::poll(&fd, 1, std::min(deadline.remaining_ms(), 100)) > 0) {
      ibv_cq* cq = nullptr;
      void* context = nullptr;
      if (::ibv_get_cq_event(channel_, &cq, &context) == 0) ++unacked_events_;
      if (unacked_events_ >= 64) {
        ::ibv_ack_cq_events(cq_, unacked_events_);
        unacked_events_ = 0;
      }
    }
  }

  int rank_, world_;
  RingOptions options_;
  std::unique_ptr<OpenPort> port_;  // the device, its GID and protection domain
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  unsigned unacked_events_ = 0;
  HostBuffer memory_;  // unmapped after the destructor's body has deregistered it
  ibv_mr* mr_ = nullptr;
  std::vector<Peer> peers_;
  VerbsRankInfo mine_;
  std::unordered_map<transport::Request, int> pending_;  // request -> peer, until done
  transport::Request next_request_ = 1;
  transport::LostPeerWatch lost_peers_;
};

}  // namespace

const OptionTable& ring_option_table() {
  const RingOptions d;
  static const OptionTable table({
      {.key = "device", .flag = "--device", .type = OptionType::text, .rules = {{"minLength", 1}},
       .help = "verbs: RDMA device (default: the first)", .metavar = "NAME"},
      {.key = "ib_port", .flag = "--ib-port", .rules = {{"minimum", 1}, {"maximum", 255}}, .fallback = d.ib_port,
       .help = "verbs: device port"},
      {.key = "gid_index", .flag = "--gid-index", .rules = {{"minimum", 0}, {"maximum", 255}},
       .help = "verbs: GID index (default: the RoCE v2 GID of the rank's address)"},
      {.key = "tos", .rules = {{"minimum", 0}, {"maximum", 255}}, .help = "traffic class (default: the device's)"},
      {.key = "slots", .rules = {{"minimum", 2}, {"maximum", 1024}}, .fallback = d.slots,
       .help = "ring slots per peer and direction"},
      // A slot stays below 2^31 bytes: its length travels in the 31 low bits of the immediate.
      {.key = "slot_bytes", .type = OptionType::size, .rules = {{"minimum", 64}, {"maximum", 1073741824}},
       .fallback = d.slot_bytes, .help = "the largest fragment"},
  });
  return table;
}

RingOptions ring_options_from(const json& v) {
  const OptionTable& t = ring_option_table();
  RingOptions o;
  o.device = t.find<std::string>(v, "device").value_or(o.device);
  o.ib_port = t.get<int>(v, "ib_port");
  o.gid_index = t.find<int>(v, "gid_index").value_or(o.gid_index);
  o.tos = t.find<int>(v, "tos").value_or(o.tos);
  o.slots = t.get<std::uint32_t>(v, "slots");
  o.slot_bytes = t.get<std::size_t>(v, "slot_bytes");
  return o;
}

std::string encode_rank_info(const VerbsRankInfo& info) {
  std::string out = fmt::format("host={} gid={} lid={} mtu={} slots={} slot_bytes={}", info.host, info.gid, info.lid,
                                info.mtu, info.slots, info.slot_bytes);
  for (std::size_t r = 0; r < info.peers.size(); ++r) {
    const auto& p = info.peers[r];
    out += fmt::format(" {}:{}:{}:{:x}:{}", r, p.qpn, p.psn, p.ring_addr, p.ring_rkey);
  }
  return out;
}

VerbsRankInfo decode_rank_info(const std::string& text, int rank, int world) {
  auto bad = [&](const std::string& what) -> InfraError {
    return InfraError(fmt::format("verbs transport: rank {} published malformed QP attributes ({}): '{}'", rank, what, text));
  };
  VerbsRankInfo info;
  std::istringstream in(text);
  std::string word;
  auto field = [&](const char* name) {
    if (!(in >> word) || word.rfind(std::string(name) + "=", 0) != 0) throw bad(fmt::format("no {}", name));
    return word.substr(std::strlen(name) + 1);
  };
  auto number = [&](const std::string& s, int base, const char* name) -> std::uint64_t {
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
      v = std::stoull(s, &used, base);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != s.size()) throw bad(fmt::format("{} '{}' is not a number", name, s));
    return v;
  };
  info.host = field("host");
  info.gid = field("gid");
  if (info.gid.size() != 32 || info.gid.find_first_not_of("0123456789abcdef") != std::string::npos) {
    throw bad("gid is not 32 hex digits");
  }
  info.lid = static_cast<std::uint16_t>(number(field("lid"), 10, "lid"));
  info.mtu = static_cast<int>(number(field("mtu"), 10, "mtu"));
  info.slots = static_cast<std::uint32_t>(number(field("slots"), 10, "slots"));
  info.slot_bytes = number(field("slot_bytes"), 10, "slot_bytes");
  info.peers.resize(static_cast<std::size_t>(world));
  std::vector<bool> seen(static_cast<std::size_t>(world));
  while (in >> word) {
    std::vector<std::string> parts;
    std::stringstream ws(word);
    for (std::string part; std::getline(ws, part, ':');) parts.push_back(part);
    if (parts.size() != 5) throw bad(fmt::format("peer entry '{}' is not rank:qpn:psn:addr:rkey", word));
    const auto r = number(parts[0], 10, "peer rank");
    if (r >= static_cast<std::uint64_t>(world)) throw bad(fmt::format("peer rank {} is outside the {} ranks", r, world));
    info.peers[r] = {static_cast<std::uint32_t>(number(parts[1], 10, "qpn")),
                     static_cast<std::uint32_t>(number(parts[2], 10, "psn")), number(parts[3], 16, "addr"),
                     static_cast<std::uint32_t>(number(parts[4], 10, "rkey"))};
    seen[r] = true;
  }
  for (int r = 0; r < world; ++r) {
    if (r != rank && !seen[static_cast<std::size_t>(r)]) throw bad(fmt::format("no QP for rank {}", r));
  }
  return info;
}

std::unique_ptr<transport::Transport> connect_mesh(Rendezvous& rendezvous, int rank, int world,
                                                   const std::string& address, const std::string& host,
                                                   const RingOptions& options, const Deadline& deadline) {
  auto timeout = [&] { return std::chrono::milliseconds(deadline.remaining_ms()); };
  auto key = [&](const char* what, int r) { return fmt::format("{}/{}/{}", options.key_prefix, what, r); };
  auto mesh = std::make_unique<VerbsTransport>(rendezvous, rank, world, options);
  // Every rank publishes either its attributes or why it has none, so all ranks skip together.
  try {
    mesh->open(address, host);
  } catch (const Unavailable& e) {
    rendezvous.set(key("qp", rank), std::string("skip ") + e.what());
    throw;
  }
  rendezvous.set(key("qp", rank), encode_rank_info(mesh->mine()));
  std::vector<VerbsRankInfo> all(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const std::string text = rendezvous.get(key("qp", r), timeout());
    if (text.rfind("skip ", 0) == 0) throw Unavailable(fmt::format("rank {}: {}", r, text.substr(5)));
    if (r != rank) all[r] = decode_rank_info(text, r, world);
  }
  mesh->connect(all);
  // Nobody writes before every QP of the mesh is ready to receive (RTR).
  rendezvous.set(key("ready", rank), "1");
  for (int r = 0; r < world; ++r) rendezvous.get(key("ready", r), timeout());
  return mesh;
}

}  // namespace rocebench::verbs
