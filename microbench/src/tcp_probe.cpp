#include "rocebench/microbench/tcp_probe.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"

namespace rocebench::microbench {

TcpOptions checked(TcpOptions o) {
  if (o.tos < -1 || o.tos > 255) throw UsageError(fmt::format("--tos must be 0..255, not {}", o.tos));
  if (o.test != "lat" && o.test != "bw") throw UsageError(fmt::format("unknown TCP test '{}' (lat, bw)", o.test));
  if (o.mode.empty()) o.mode = o.test == "lat" ? "busy" : "blocking";
  if (o.mode != "busy" && o.mode != "blocking") {
    throw UsageError(fmt::format("unknown mode '{}' (busy, blocking)", o.mode));
  }
  return o;
}

namespace {

constexpr char kContinue = 'C';
constexpr char kLast = 'L';
constexpr char kAckMe = 'A';  // bandwidth: the driver's "signaled" message, which the receiver acks
constexpr std::size_t kHello = 32;

class TcpProbe final : public Probe {
 public:
  TcpProbe(int fd, TcpOptions options, std::string peer)
      : fd_(fd), o_(std::move(options)), peer_(std::move(peer)),
        wait_(o_.mode == "busy" ? tcp::Wait::spin : tcp::Wait::block) {
    tcp::set_timeouts(fd_, o_.wait);  // each blocking call's sleep (tcp::Wait::block)
    if (o_.tos >= 0 && ::setsockopt(fd_, IPPROTO_IP, IP_TOS, &o_.tos, sizeof o_.tos) != 0) {
      const int err = errno;
      ::close(fd_);
      throw InfraError(fmt::format("setsockopt(IP_TOS, {}): {}", o_.tos, std::strerror(err)));
    }
    if (o_.test == "bw") {
      const int off = 0;  // a stream, as iperf3 sends it; the receiver's acks stay NODELAY
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &off, sizeof off);
    }
  }
  ~TcpProbe() override { ::close(fd_); }
  TcpProbe(const TcpProbe&) = delete;
  TcpProbe& operator=(const TcpProbe&) = delete;

  ProbeKind kind() const override { return o_.test == "lat" ? ProbeKind::latency : ProbeKind::bandwidth; }
  json params() const override {
    json p = {{"transport", "tcp"}, {"test", o_.test}, {"mode", o_.mode}, {"tcp_congestion", tcp::congestion_control(fd_)}};
    if (o_.tos >= 0) p["tos"] = o_.tos;
    return p;
  }
  std::string peer() const override { return peer_; }

  void begin_size(std::size_t bytes) override {
    const std::uint64_t b = bytes;
    send_exact(&b, sizeof b);
    resize(bytes);
    acked_ = reported_ = 0;
  }
  std::size_t next_size() override {
    std::uint64_t b = 0;
    recv_exact(&b, sizeof b, tcp::Wait::block);
    resize(static_cast<std::size_t>(b));
    return static_cast<std::size_t>(b);
  }

  void ping(bool last) override {
    buf_[0] = last ? kLast : kContinue;
    send_exact(buf_.data(), buf_.size());
    recv_exact(buf_.data(), buf_.size(), wait_);
  }

  // As a verbs send queue under CQ moderation: only signaled messages (and the last) are acked.
  void post(bool last, bool signaled) override {
    buf_[0] = last ? kLast : signaled ? kAckMe : kContinue;
    send_exact(buf_.data(), buf_.size());
  }

  // Reads the receiver's cumulative message counts; returns what completed since the last call.
  std::size_t poll(bool wait) override {
    auto* counts = ack_buf_;
    while (true) {
      char* into = reinterpret_cast<char*>(counts) + ack_partial_;
      const std::size_t room = sizeof ack_buf_ - ack_partial_;
      const std::size_t n = recv_some(into, room, wait);
      if (n == 0) break;
      const std::size_t have = ack_partial_ + n;
      const std::size_t whole = have / sizeof(std::uint64_t);
      if (whole) acked_ = counts[whole - 1];
      ack_partial_ = have % sizeof(std::uint64_t);
      if (ack_partial_) std::memmove(counts, reinterpret_cast<char*>(counts) + whole * 8, ack_partial_);
      if (acked_ > reported_) break;
    }
    const std::size_t fresh = acked_ - reported_;
    reported_ = acked_;
    return fresh;
  }

  void serve(std::size_t bytes) override {
    if (o_.test == "lat") {
      do {
        recv_exact(buf_.data(), bytes, wait_);
        send_exact(buf_.data(), bytes);
      } while (buf_[0] != kLast);
      return;
    }
    // Bandwidth: read the stream in large chunks, find each message's first byte, and ack the
    // cumulative count when a signaled message (or the last) is complete. Acking after every recv()
    // had cost 0.85-0.89 of iperf3's loopback rate: 68k 8-byte segments back in 3 s.
    std::vector<char> chunk(std::max<std::size_t>(bytes, 1 << 20));
    std::uint64_t received = 0;
    std::size_t offset = 0;  // position within the current message
    char flag = kContinue;   // the current message's first byte
    bool done = false;       // once the last message has fully arrived
    while (!done) {
      const std::size_t n = recv_some(chunk.data(), chunk.size());
      bool ack = false;
      for (std::size_t at = 0; at < n;) {
        if (offset == 0) flag = chunk[at];
        const std::size_t take = std::min(bytes - offset, n - at);
        at += take;
        offset += take;
        if (offset == bytes) {
          offset = 0;
          ++received;
          done = flag == kLast;
          ack = ack || flag != kContinue;
        }
      }
      if (ack) send_exact(&received, sizeof received);
    }
  }

 private:
  void resize(std::size_t bytes) {
    buf_.assign(std::max<std::size_t>(bytes, 1), 0);
    for (std::size_t i = 1; i < buf_.size(); ++i) buf_[i] = static_cast<char>(i);
  }

  // The transport's socket calls, each bounded by the probe's wait; what fails names the peer as
  // this probe knows it.
  template <typename Call>
  auto io(bool sending, Call call) {
    try {
      return call(Deadline(o_.wait));
    } catch (const DeadlineExceeded&) {
      throw DeadlineExceeded(fmt::format("the peer {} {} for {} ms", peer_,
                                         sending ? "accepted nothing" : "sent nothing", o_.wait.count()));
    } catch (const InfraError& e) {
      throw InfraError(
          fmt::format("the peer {} was lost while {}: {}", peer_, sending ? "sending" : "receiving", e.what()));
    }
  }

  void send_exact(const void* data, std::size_t size) {
    io(true, [&](const Deadline& d) { tcp::send_all(fd_, data, size, d, tcp::Wait::block); });
  }
  void recv_exact(void* data, std::size_t size, tcp::Wait how) {
    io(false, [&](const Deadline& d) { tcp::recv_all(fd_, data, size, d, how); });
  }
  // Whatever has arrived: at least a byte, waited for in this probe's mode, or (no wait) 0 if none.
  std::size_t recv_some(void* data, std::size_t size, bool wait = true) {
    return io(false, [&](const Deadline& d) {
      return wait ? tcp::recv_some(fd_, data, size, d, wait_) : tcp::recv_ready(fd_, data, size);
    });
  }

  int fd_;
  TcpOptions o_;
  std::string peer_;
  tcp::Wait wait_;  // for the peer's messages: spinning (busy mode) or asleep in recv() (blocking)
  std::vector<char> buf_;
  std::uint64_t acked_ = 0, reported_ = 0;
  std::uint64_t ack_buf_[64]{};  // cumulative counts from the receiver; a partial one waits here
  std::size_t ack_partial_ = 0;
};

std::string hello_of(const TcpOptions& o) { return fmt::format("rocebench-tcp {}", o.test); }

}  // namespace

std::unique_ptr<Probe> tcp_connect(const std::string& host, int port, const TcpOptions& options) {
  const TcpOptions o = checked(options);
  const Deadline deadline(o.wait);
  const int fd = tcp::connect_to(host, port, deadline);
  const std::string peer = fmt::format("{}:{}", host, port);
  std::string hello = hello_of(o);
  hello.resize(kHello, '\0');
  char answer = 0;
  try {
    tcp::send_all(fd, hello.data(), hello.size(), deadline);
    tcp::recv_all(fd, &answer, 1, deadline);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (answer != 'Y') {
    ::close(fd);
    throw InputError(fmt::format("the server {} runs a different test than tcp {}", peer, o.test));
  }
  return std::make_unique<TcpProbe>(fd, o, peer);
}

std::unique_ptr<Probe> tcp_accept(int listen_fd, const TcpOptions& options) {
  const TcpOptions o = checked(options);
  const Deadline deadline(o.wait);
  int fd = -1;
  try {
    fd = tcp::accept_one(listen_fd, deadline);
  } catch (const DeadlineExceeded&) {
    throw DeadlineExceeded(fmt::format("no client connected to port {} within {} ms", tcp::local_port(listen_fd),
                                       o.wait.count()));
  }
  const std::string peer = tcp::peer_name(fd);
  std::string hello(kHello, '\0');
  try {
    tcp::recv_all(fd, hello.data(), hello.size(), deadline);
    hello.resize(std::strlen(hello.c_str()));
    const char answer = hello == hello_of(o) ? 'Y' : 'N';
    tcp::send_all(fd, &answer, 1, deadline);
    if (answer != 'Y') throw InputError(fmt::format("the client {} asked for '{}', this server runs tcp {}", peer, hello, o.test));
  } catch (...) {
    ::close(fd);
    throw;
  }
  return std::make_unique<TcpProbe>(fd, o, peer);
}

}  // namespace rocebench::microbench
