// TCP transport: a full mesh, each peer reached over `sockets_per_peer` non-blocking sockets.
// Progress is made by whoever waits: one poll() over every socket that has work queued.
#include "rocebench/transport/tcp/mesh.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "../lost_peers.hpp"

namespace rocebench::tcp {

namespace {

// One direction of one socket: the byte ranges still to move, in posting order.
struct Part {
  transport::Request request;
  char* data;
  std::size_t left;
};

struct Socket {
  int fd = -1;
  int peer = -1;
  std::deque<Part> sends, recvs;
  bool peer_on_this_host = false;
};

// The SO_SNDBUF a socket asks for (0: none, the kernel autotunes it).
std::size_t send_buffer_request(const MeshOptions& options, bool peer_on_this_host) {
  return options.send_buffer.value_or(peer_on_this_host ? kSameHostSendBuffer : 0);
}

// What the kernel made of a SO_SNDBUF request: twice the bytes asked for (its bookkeeping), capped
// by net.core.wmem_max.
int send_buffer_of(int fd) {
  int bytes = 0;
  socklen_t length = sizeof bytes;
  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, &length);
  return bytes;
}

class TcpTransport final : public transport::Transport {
 public:
  TcpTransport(Rendezvous& rendezvous, int rank, int world, std::vector<std::string> hosts, std::vector<Socket> sockets,
               const MeshOptions& options)
      : rank_(rank),
        world_(world),
        hosts_(std::move(hosts)),
        sockets_(std::move(sockets)),
        options_(options),
        lost_peers_(rendezvous, rank, "tcp") {
    for (std::size_t i = 0; i < sockets_.size(); ++i) by_peer_[sockets_[i].peer].push_back(i);
  }
  ~TcpTransport() override {
    for (auto& s : sockets_) ::close(s.fd);
  }

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string name() const override { return "tcp"; }
  json settings() const override {
    json out = {{"sockets_per_peer", options_.sockets_per_peer}, {"spin_us", options_.spin.count()}};
    if (sockets_.empty()) return out;
    out["tcp_congestion"] = congestion_control(sockets_.front().fd);
    out["tcp_sndbuf"] = send_buffer_setting();
    return out;
  }

  transport::Request send(int peer, const void* data, std::size_t bytes) override {
    return post(peer, const_cast<char*>(static_cast<const char*>(data)), bytes, true);
  }
  transport::Request recv(int peer, void* data, std::size_t bytes) override { return post(peer, static_cast<char*>(data), bytes, false); }

  void wait(std::span<const transport::Request> requests, const Deadline& deadline) override {
    auto all_done = [&] {
      for (transport::Request r : requests) {
        if (parts_left_.count(r)) return false;
      }
      return true;
    };
    while (!all_done()) progress(deadline);
  }

 private:
  transport::Request post(int peer, char* data, std::size_t bytes, bool is_send) {
    if (peer < 0 || peer >= world_ || peer == rank_) throw std::logic_error(fmt::format("bad peer {}", peer));
    const transport::Request id = next_request_++;
    const auto& socks = by_peer_.at(peer);
    // Large messages are striped over the peer's sockets; both ends split them the same way.
    const std::size_t stripes = bytes >= options_.stripe_min_bytes ? socks.size() : 1;
    int parts = 0;
    for (std::size_t k = 0; k < stripes; ++k) {
      const std::size_t begin = bytes * k / stripes, end = bytes * (k + 1) / stripes;
      if (end == begin && !(k == 0 && bytes == 0)) continue;
      Socket& s = sockets_[socks[k]];
      (is_send ? s.sends : s.recvs).push_back({id, data + begin, end - begin});
      ++parts;
    }
    parts_left_[id] = parts;
    // Zero-byte parts complete at once; they still keep their place in the order.
    for (auto i : socks) drain_empty(sockets_[i]);
    return id;
  }

  void finish_part(std::deque<Part>& queue) {
    const transport::Request id = queue.front().request;
    queue.pop_front();
    if (--parts_left_[id] == 0) parts_left_.erase(id);
  }

  void drain_empty(Socket& s) {
    while (!s.sends.empty() && s.sends.front().left == 0) finish_part(s.sends);
    while (!s.recvs.empty() && s.recvs.front().left == 0) finish_part(s.recvs);
  }

  // "auto", the granted bytes, or both when peers on this host and on others differ:
  // "262144 same host, auto other hosts".
  std::string send_buffer_setting() const {
    std::map<bool, std::string> by_place;  // peer on this host -> setting
    for (const auto& s : sockets_) {
      const bool fixed = send_buffer_request(options_, s.peer_on_this_host) > 0;
      by_place.emplace(s.peer_on_this_host, fixed ? std::to_string(send_buffer_of(s.fd)) : "auto");
    }
    if (by_place.size() == 1 || by_place[true] == by_place[false]) return by_place.begin()->second;
    return fmt::format("{} same host, {} other hosts", by_place[true], by_place[false]);
  }

  [[noreturn]] void peer_failed(const Socket& s, const std::string& what) {
    throw InfraError(fmt::format("rank {}: tcp transport: rank {} on host {} {}", rank_, s.peer, hosts_[s.peer], what));
  }

  // Moves what can be moved without blocking on every socket with queued work.
  void progress(const Deadline& deadline) {
    std::vector<pollfd> fds;
    std::vector<std::size_t> which;
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
      Socket& s = sockets_[i];
      const short events = static_cast<short>((s.sends.empty() ? 0 : POLLOUT) | (s.recvs.empty() ? 0 : POLLIN));
      if (!events) continue;
      fds.push_back({s.fd, events, 0});
      which.push_back(i);
    }
    if (fds.empty()) return;
    auto owed = [&] {
      std::set<std::string> names;
      for (std::size_t i : which) names.insert(fmt::format("rank {} on host {}", sockets_[i].peer, hosts_[sockets_[i].peer]));
      return fmt::format("{}", fmt::join(names, ", "));
    };
    int n = poll_spinning(fds);
    // Then asleep in poll, for at most the watch's interval at a time, so that a lost rank ends the wait.
    while (n == 0 && !deadline.expired()) {
      n = ::poll(fds.data(), fds.size(), std::min(deadline.remaining_ms(), transport::LostPeerWatch::kIntervalMs));
      if (n == 0) lost_peers_.check(owed);
    }
    if (n < 0 && errno != EINTR) throw InfraError(std::string("poll failed: ") + std::strerror(errno));
    if (n == 0) {
      throw DeadlineExceeded(fmt::format("rank {}: tcp transport: deadline passed with transfers pending to/from {}", rank_,
                                         owed()));
    }
    for (std::size_t k = 0; k < fds.size(); ++k) {
      Socket& s = sockets_[which[k]];
      if (fds[k].revents & (POLLERR | POLLNVAL)) peer_failed(s, "broke the connection");
      if (fds[k].revents & (POLLIN | POLLHUP)) pump_recv(s);
      if (fds[k].revents & POLLOUT) pump_send(s);
    }
  }

  // Polls without sleeping for up to options_.spin (once at least), yielding the CPU between tries; 0 when
  // nothing became ready (the caller then sleeps in poll). A sleeping vCPU here takes ~50 us to wake, a
  // whole 1 MiB ring step on loopback (measured, 2 and 4 local ranks at 1 MiB: busbw 0.75 and 0.68 of
  // Open MPI's blocking at once, 0.96 spinning 50 us).
  // sched_yield lets a rank or the kernel's packet work that shares the CPU run meanwhile.
  int poll_spinning(std::vector<pollfd>& fds) {
    const std::int64_t until = now_ns() + std::chrono::nanoseconds(options_.spin).count();
    while (true) {
      const int n = ::poll(fds.data(), fds.size(), 0);
      if (n != 0 || now_ns() >= until) return n;
      ::sched_yield();
    }
  }

  void pump_send(Socket& s) {
    while (!s.sends.empty()) {
      Part& p = s.sends.front();
      const ssize_t n = ::send(s.fd, p.data, p.left, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        peer_failed(s, std::string("is unreachable: ") + std::strerror(errno));
      }
      p.data += n;
      p.left -= static_cast<std::size_t>(n);
      if (p.left) return;
      finish_part(s.sends);
      drain_empty(s);
    }
  }

  void pump_recv(Socket& s) {
    while (!s.recvs.empty()) {
      Part& p = s.recvs.front();
      const ssize_t n = ::recv(s.fd, p.data, p.left, MSG_DONTWAIT);
      if (n == 0) peer_failed(s, "closed the connection (process died?)");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
        peer_failed(s, std::string("broke the connection: ") + std::strerror(errno));
      }
      p.data += n;
      p.left -= static_cast<std::size_t>(n);
      if (p.left) return;
      finish_part(s.recvs);
      drain_empty(s);
    }
  }

  int rank_, world_;
  std::vector<std::string> hosts_;
  std::vector<Socket> sockets_;
  MeshOptions options_;
  std::unordered_map<int, std::vector<std::size_t>> by_peer_;
  std::unordered_map<transport::Request, int> parts_left_;
  transport::Request next_request_ = 1;
  transport::LostPeerWatch lost_peers_;
};

// Congestion control is the host's choice unless a plan asks for another: under BBR, TCP paces every
// socket with a timer, which on loopback here halved a 1 MiB allreduce (see collectives/README.md).
void set_congestion(const std::vector<Socket>& sockets, const std::string& name) {
  for (const auto& s : sockets) {
    if (::setsockopt(s.fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0) continue;
    const std::string why = std::strerror(errno);
    const std::string available = HostFs().read("/proc/sys/net/ipv4/tcp_available_congestion_control").value_or("");
    for (const auto& open : sockets) ::close(open.fd);
    throw InputError(fmt::format("tcp_congestion '{}' cannot be set: {} (this host has: {})", name, why, available));
  }
}

struct Hello {
  std::int32_t rank;
  std::int32_t index;
};

}  // namespace

const OptionTable& mesh_option_table() {
  const MeshOptions d;
  static const OptionTable table({
      {.key = "sockets_per_peer", .flag = "--sockets", .rules = {{"minimum", 1}, {"maximum", 16}},
       .fallback = d.sockets_per_peer, .help = "TCP sockets per peer"},
      {.key = "spin_us", .flag = "--spin-us", .rules = {{"minimum", 0}, {"maximum", 10000}},
       .fallback = d.spin.count(), .help = "TCP: microseconds a wait polls before it sleeps (0: at once)"},
      {.key = "tcp_congestion", .flag = "--tcp-congestion", .type = OptionType::text, .rules = {{"minLength", 1}},
       .help = "TCP congestion control (cubic, bbr …; default: the host's)", .metavar = "NAME"},
      {.key = "tcp_sndbuf", .flag = "--tcp-sndbuf", .type = OptionType::size,
       .rules = {{"minimum", 0}, {"maximum", 1073741824}},
       .help = "TCP: fixed SO_SNDBUF per socket (0: the kernel's autotuning; default: 128K to a peer on this host, "
               "autotuning to others)"},
  });
  return table;
}

MeshOptions mesh_options_from(const json& params) {
  const OptionTable& t = mesh_option_table();
  MeshOptions o;
  o.sockets_per_peer = t.get<int>(params, "sockets_per_peer");
  o.spin = std::chrono::microseconds(t.get<int>(params, "spin_us"));
  o.congestion = t.find<std::string>(params, "tcp_congestion").value_or("");
  o.send_buffer = t.find<std::size_t>(params, "tcp_sndbuf");
  return o;
}

std::unique_ptr<transport::Transport> connect_mesh(Rendezvous& rendezvous, int rank, int world,
                                                   const std::string& address, const std::string& host,
                                                   const MeshOptions& options, const Deadline& deadline) {
  const auto timeout = std::chrono::milliseconds(deadline.remaining_ms());
  const int listener = listen_on(address, 0);
  rendezvous.set(fmt::format("{}/{}", options.key_prefix, rank),
                 fmt::format("{} {} {}", address, local_port(listener), host));
  std::vector<std::string> hosts(world), addresses(world);
  std::vector<int> ports(world);
  for (int r = 0; r < world; ++r) {
    std::istringstream in(rendezvous.get(fmt::format("{}/{}", options.key_prefix, r), timeout));
    in >> addresses[r] >> ports[r] >> hosts[r];
  }

  // Higher ranks connect to lower ones; the listen backlog lets every connect finish before the
  // lower rank accepts, so there is no ordering to deadlock on.
  std::vector<Socket> sockets;
  for (int peer = 0; peer < rank; ++peer) {
    for (int k = 0; k < options.sockets_per_peer; ++k) {
      const int fd = connect_to(addresses[peer], ports[peer], deadline);
      const Hello hello{rank, k};
      send_all(fd, &hello, sizeof hello, deadline);
      sockets.push_back({fd, peer, {}, {}});
    }
  }
  const int expected = (world - 1 - rank) * options.sockets_per_peer;
  std::map<std::pair<int, int>, int> accepted;
  for (int i = 0; i < expected; ++i) {
    const int fd = accept_one(listener, deadline);
    Hello hello{};
    recv_all(fd, &hello, sizeof hello, deadline);
    if (hello.rank <= rank || hello.rank >= world) throw InfraError(fmt::format("tcp mesh: unexpected hello from rank {}", hello.rank));
    accepted[{hello.rank, hello.index}] = fd;
  }
  ::close(listener);
  for (const auto& [key, fd] : accepted) sockets.push_back({fd, key.first, {}, {}});  // ordered by (peer, index)
  // Receive buffers are always the kernel's to autotune (a fixed SO_RCVBUF would cap the window);
  // send buffers too, between hosts, unless the plan fixes them (see MeshOptions).
  if (!options.congestion.empty()) set_congestion(sockets, options.congestion);
  for (auto& s : sockets) {
    s.peer_on_this_host = peer_on_this_host(s.fd);
    const int bytes = static_cast<int>(send_buffer_request(options, s.peer_on_this_host));
    if (bytes > 0) ::setsockopt(s.fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof bytes);
  }
  return std::make_unique<TcpTransport>(rendezvous, rank, world, std::move(hosts), std::move(sockets), options);
}

}  // namespace rocebench::tcp
