// The verbs RC tests (perftest's write/send/read latency and bandwidth) behind the Probe interface:
// the test loops only. A TCP control socket carries the hello, each size's buffer address and rkey,
// the end of each size and the server's report; the device, the CQs and the QPs, connected through
// rdma_cm (default) or by exchanging QP attributes over that socket (oob), are the transport's
// (rocebench/transport/verbs/pair.hpp).
#include "verbs_probe.hpp"

#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/microbench/counters.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "rocebench/transport/verbs/pair.hpp"
#include "rocebench/transport/verbs/rc.hpp"
#include "gpu_buffer.hpp"

namespace rocebench::microbench {

namespace {

constexpr char kContinue = 'C';
constexpr char kLast = 'L';
constexpr std::uint32_t kMaxInline = 220;  // what perftest asks for; retried with 0 if refused
constexpr int kMaxRdAtomic = 16;  // RDMA reads in flight, as perftest's read tests

// The device the options name (or the first); Unavailable when this host has none.
std::string pick_device(const VerbsProbeOptions& o) {
  const std::string name = verbs::choose_device(o.device);
  if (name.empty()) throw Unavailable("no RDMA device on this host (ibv_get_device_list found none)");
  if (o.gpu >= 0) {
    if (auto why = gpu_buffer_unavailable(o.gpu)) throw Unavailable(*why);
  }
  return name;
}

[[noreturn]] void verbs_error(const std::string& what, int err) {
  throw InfraError(fmt::format("{}: {}", what, std::strerror(err)));
}

// A busy wait's deadline that reads the clock only every 1024 spins: each read is time the loop does
// not watch the queue (under TCG a clock read costs about as much as a poll).
class SpinDeadline {
 public:
  explicit SpinDeadline(std::chrono::milliseconds wait) : wait_ns_(wait.count() * 1'000'000) {}
  bool expired() {
    if ((++spins_ & 1023) != 0) return false;
    const std::int64_t now = now_ns();
    if (start_ == 0) start_ = now;
    return now - start_ > wait_ns_;
  }

 private:
  std::int64_t wait_ns_, start_ = 0;
  std::uint64_t spins_ = 0;
};

char pattern_byte(std::size_t i, std::size_t bytes) { return static_cast<char>((i * 7 + bytes) & 0xff); }

struct BufferInfo {
  std::uint64_t addr;
  std::uint32_t rkey, pad;
};
struct SizeReport {  // the server's answer to the end of a size
  std::uint32_t validation_errors;
  std::uint32_t pad;
  BandwidthFigures reverse;  // bidirectional: the server's own direction
};
struct LoopSpec {  // bidirectional: the client's window loop, which the server runs too
  std::int32_t iterations, warmup, tx_depth, cq_mod;
  double duration_s;
};

class VerbsProbe final : public Probe {
 public:
  VerbsProbe(const ProbeSpec& spec, int control_fd, std::string peer, bool active)
      : spec_(spec), o_(spec.verbs), fd_(control_fd), peer_(std::move(peer)), active_(active) {}
  ~VerbsProbe() override { release(); }
  VerbsProbe(const VerbsProbe&) = delete;
  VerbsProbe& operator=(const VerbsProbe&) = delete;

  // The QPs' connection, client side (rdma_cm, or out of band over the control socket).
  void connect_client(const std::string& host, int port) {
    if (o_.connect == "cm") opened(verbs::connect_cm(host, port, o_, pair_options()));
    else connect_oob();
  }

  // Server side: rdma_cm's listener (cm) listens on the same port number as the TCP control socket.
  void accept_server(verbs::CmListener* listener) {
    if (listener) opened(listener->accept(pair_options()));
    else connect_oob();
  }

  // Bidirectional: the client tells the server its window loop (and TX depth, which sizes the QPs).
  void exchange_loop() {
    const Deadline deadline(spec_.wait);
    const DriverOptions& d = spec_.driver;
    LoopSpec loop{d.iterations, d.warmup, d.tx_depth, d.cq_mod, d.duration_s};
    if (active_) {
      tcp::send_all(fd_, &loop, sizeof loop, deadline);
      return;
    }
    tcp::recv_all(fd_, &loop, sizeof loop, deadline);
    reverse_loop_ = DriverOptions{.iterations = loop.iterations, .warmup = loop.warmup,
                                  .duration_s = loop.duration_s, .tx_depth = loop.tx_depth, .cq_mod = loop.cq_mod};
    spec_.driver.tx_depth = loop.tx_depth;
  }

  ProbeKind kind() const override { return spec_.test.ends_with("lat") ? ProbeKind::latency : ProbeKind::bandwidth; }
  std::optional<DriverOptions> reverse_loop() const override { return reverse_loop_; }
  void set_reverse_figures(const BandwidthFigures& own) override { reverse_ = own; }
  double round_trip_divisor() const override { return read_lat_ ? 1.0 : 2.0; }
  json params() const override {
    json p = {{"transport", "verbs"}, {"test", spec_.test}};
    p.update(verbs_params(spec_));
    p["device"] = pair_->port().device();
    if (pair_->port().gid_index() >= 0) p["gid_index"] = pair_->port().gid_index();
    return p;
  }
  std::string peer() const override { return peer_; }

  void begin_size(std::size_t bytes) override {
    const std::uint64_t b = bytes;
    tcp::send_all(fd_, &b, sizeof b, Deadline(spec_.wait));
    if (bytes) prepare(bytes);
  }
  std::size_t next_size() override {
    std::uint64_t b = 0;
    tcp::recv_all(fd_, &b, sizeof b, Deadline(spec_.wait));
    if (b) prepare(static_cast<std::size_t>(b));
    return static_cast<std::size_t>(b);
  }

  void ping(bool last) override {
    ++seq_;
    if (read_lat_) {
      post_one(0, IBV_WR_RDMA_READ, false);
      wait_completions(1);
      return;
    }
    out()[0] = last ? kLast : kContinue;
    out()[bytes_ - 1] = static_cast<char>(seq_);
    answer(last);
    if (write_lat_) wait_write_arrival();
    else wait_receive();  // send_lat
  }

  // One ping-pong leg of write_lat / send_lat, as perftest runs each: its write_lat signals every
  // write and waits for that completion before it watches for the peer's write; its send_lat signals
  // one send in cq_mod (and the last) and polls the send queue only then.
  void answer(bool last) {
    const bool signaled = write_lat_ || last || seq_ % cq_moderation(spec_.driver) == 0;
    post_one(0, write_lat_ ? IBV_WR_RDMA_WRITE : IBV_WR_SEND, true, signaled);
    if (signaled) wait_completions(1);
  }

  void post(bool /*last: the server learns the end over the control socket*/, bool signaled) override {
    const ibv_wr_opcode op = spec_.test == "write_bw" ? IBV_WR_RDMA_WRITE
                             : spec_.test == "send_bw" ? IBV_WR_SEND
                                                       : IBV_WR_RDMA_READ;
    // Moderation needs one queue: a signaled completion covers only the earlier WRs of its own QP,
    // and each QP's last WR would have to be signaled. With several QPs every WR is.
    post_one(static_cast<std::size_t>(posted_++ % static_cast<std::uint64_t>(o_.qps)), op, op != IBV_WR_RDMA_READ,
             signaled || o_.qps > 1);
  }

  std::size_t poll(bool wait) override {
    ibv_wc wc[32];
    SpinDeadline deadline(spec_.wait);
    while (true) {
      if (receives_while_sending_) repost_arrived_receives();
      const int n = ::ibv_poll_cq(pair_->send_cq(), 32, wc);
      if (n < 0) throw InfraError(fmt::format("polling the completion queue failed (peer {})", peer_));
      std::size_t messages = 0;
      for (int i = 0; i < n; ++i) {
        check(wc[i]);
        messages += covered_.front();
        covered_.pop_front();
      }
      if (n > 0 || !wait) return messages;
      if (deadline.expired()) timeout("completions");
    }
  }

  json end_size() override {
    const std::uint64_t done = 0;  // a zero in place of a size: the measured loop is over
    tcp::send_all(fd_, &done, sizeof done, Deadline(spec_.wait));
    // Bidirectional send_bw: the server's messages still need receives until its report says it is done.
    const Deadline deadline(spec_.wait);
    while (receives_while_sending_ && !control_readable()) {
      repost_arrived_receives();
      if (deadline.expired()) timeout("the end of its messages");
    }
    SizeReport report{};
    tcp::recv_all(fd_, &report, sizeof report, Deadline(spec_.wait));
    json out = counter_deltas(before_, counters());
    out["active_mtu"] = verbs::mtu_bytes(pair_->port().attributes().active_mtu);
    if (gpu_) out["gpu_registration"] = gpu_->registration();
    if (o_.bidirectional) {
      out["rev_bw_avg_Gbps"] = report.reverse.avg_Gbps;
      out["rev_bw_peak_Gbps"] = report.reverse.peak_Gbps;
      out["rev_msg_rate_Mpps"] = report.reverse.msg_rate_Mpps;
    }
    std::uint32_t errors = report.validation_errors + validation_errors_ +
                           (o_.validate && active_ && !receives_while_sending_ ? local_validation() : 0);
    if (o_.validate) {
      out["validated"] = true;
      if (errors) out["failure"] = fmt::format("{} message(s) arrived with wrong data", errors);
    }
    release_buffer();
    return out;
  }

  void serve(std::size_t bytes) override {
    std::uint32_t errors = 0;  // of latency messages; those of send_bw count in validation_errors_
    if (write_lat_ || spec_.test == "send_lat") {
      do {
        ++seq_;
        if (write_lat_) wait_write_arrival();
        else wait_receive();
        if (o_.validate) errors += local_validation();
        const bool last = in()[0] == kLast;
        out()[bytes - 1] = static_cast<char>(seq_);
        answer(last);
        if (last) break;
      } while (true);
    } else if (spec_.test == "send_bw") {
      // Keep receives posted until the client says the size is over.
      while (!control_says_done()) repost_arrived_receives();
    }
    if (spec_.test != "send_bw") {
      std::uint64_t done = 1;
      tcp::recv_all(fd_, &done, sizeof done, Deadline(spec_.wait));
    }
    if (o_.validate && spec_.test == "write_bw") errors += local_validation();
    const SizeReport report{errors + validation_errors_, 0, reverse_};
    tcp::send_all(fd_, &report, sizeof report, Deadline(spec_.wait));
    release_buffer();
  }

 private:
  template <typename T>
  T* must(T* p, const char* what) {
    if (!p) verbs_error(what, errno);
    return p;
  }

  verbs::PairOptions pair_options() const {
    return {.qps = o_.qps, .depth = static_cast<std::uint32_t>(spec_.driver.tx_depth), .max_inline = kMaxInline,
            .max_rd_atomic = kMaxRdAtomic, .wait = spec_.wait, .peer = peer_};
  }

  void connect_oob() {
    const std::string address = o_.address.empty() ? tcp::local_address(fd_) : o_.address;
    opened(verbs::connect_oob(fd_, o_, address, pair_options(), Deadline(spec_.wait)));
  }

  void opened(std::unique_ptr<verbs::RcPair> pair) {
    pair_ = std::move(pair);
    before_ = counters();
  }

  CounterSnapshot counters() const { return read_counters(o_.root, pair_->port().device(), pair_->port().port()); }

  // Per size: a registered buffer with the pattern, exchanged with the peer; receives posted.
  void prepare(std::size_t bytes) {
    if (bytes < 2) throw InputError("verbs tests need messages of at least 2 bytes");
    bytes_ = bytes;
    seq_ = 0;
    posted_ = 0;
    unreported_ = 0;
    covered_.clear();
    validation_errors_ = 0;
    reverse_ = {};
    // Two regions: what the peer writes (and reads) and what arrives, apart from what this side sends,
    // so a ping-pong never mistakes its own outgoing sequence byte for the peer's answer.
    stride_ = (bytes + 4095) / 4096 * 4096;
    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    std::vector<char> pattern(2 * stride_);
    for (std::size_t i = 0; i < bytes; ++i) pattern[i] = pattern[stride_ + i] = pattern_byte(i, bytes);
    if (o_.gpu >= 0) {
      gpu_ = std::make_unique<GpuBuffer>(o_.gpu, pair_->port().pd(), 2 * stride_, access);
      gpu_->write(0, pattern.data(), pattern.size());
      buf_ = gpu_->data();
      mr_ = gpu_->mr();
    } else {
      buf_ = static_cast<char*>(std::aligned_alloc(4096, 2 * stride_));
      std::memcpy(buf_, pattern.data(), pattern.size());
      mr_ = must(::ibv_reg_mr(pair_->port().pd(), buf_, 2 * stride_, access), "ibv_reg_mr");
    }
    const BufferInfo mine{reinterpret_cast<std::uintptr_t>(buf_), mr_->rkey, 0};
    BufferInfo theirs{};
    const Deadline deadline(spec_.wait);
    tcp::send_all(fd_, &mine, sizeof mine, deadline);
    tcp::recv_all(fd_, &theirs, sizeof theirs, deadline);
    remote_ = theirs;
    if (spec_.test == "send_lat" || spec_.test == "send_bw") {
      const int per_qp = spec_.test == "send_lat" ? 1 : spec_.driver.tx_depth;
      for (std::size_t q = 0; q < pair_->qps().size(); ++q) {
        for (int i = 0; i < per_qp; ++i) post_receive(q);
      }
    }
    // Both sides have their receives posted before the client's first send.
    char ready = 'R';
    tcp::send_all(fd_, &ready, 1, deadline);
    tcp::recv_all(fd_, &ready, 1, deadline);
    if (active_) before_ = counters();
  }

  void release_buffer() {
    if (gpu_) {
      gpu_.reset();  // its registration with it
    } else {
      if (mr_) ::ibv_dereg_mr(mr_);
      std::free(buf_);
    }
    mr_ = nullptr;
    buf_ = nullptr;
  }

  // The buffer's registration goes before the pair's protection domain.
  void release() {
    release_buffer();
    pair_.reset();
    ::close(fd_);
  }

  void post_one(std::size_t q, ibv_wr_opcode op, bool may_inline, bool signaled = true) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(op == IBV_WR_RDMA_READ ? in() : out()), static_cast<std::uint32_t>(bytes_), mr_->lkey};
    ibv_send_wr wr{};
    wr.wr_id = q;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
    if (may_inline && bytes_ <= pair_->max_inline()) wr.send_flags |= IBV_SEND_INLINE;
    if (op != IBV_WR_SEND) {
      wr.wr.rdma.remote_addr = remote_.addr;
      wr.wr.rdma.rkey = remote_.rkey;
    }
    ibv_send_wr* bad = nullptr;
    if (const int rc = ::ibv_post_send(pair_->qps()[q], &wr, &bad)) verbs_error(fmt::format("ibv_post_send to {}", peer_), rc);
    ++unreported_;
    if (signaled) covered_.push_back(std::exchange(unreported_, 0));
  }

  void post_receive(std::size_t q) {
    ibv_sge sge{reinterpret_cast<std::uintptr_t>(in()), static_cast<std::uint32_t>(bytes_), mr_->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = q;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ::ibv_post_recv(pair_->qps()[q], &wr, &bad)) verbs_error("ibv_post_recv", rc);
  }

  std::size_t qp_index_of(std::uint32_t qpn) const {
    for (std::size_t q = 0; q < pair_->qps().size(); ++q) {
      if (pair_->qps()[q]->qp_num == qpn) return q;
    }
    return 0;
  }

  void check(const ibv_wc& wc) const {
    if (wc.status != IBV_WC_SUCCESS) {
      throw InfraError(fmt::format("work completion with {}: {} (vendor error {:#x})", peer_,
                                   ::ibv_wc_status_str(wc.status), wc.vendor_err));
    }
  }

  // Completions of our own sends / reads (receive completions are counted by wait_receive).
  void wait_completions(std::size_t n) {
    std::size_t got = 0;
    while (got < n) got += poll(true);
  }

  void wait_receive() {
    SpinDeadline deadline(spec_.wait);
    ibv_wc wc{};
    while (true) {
      const int n = ::ibv_poll_cq(pair_->recv_cq(), 1, &wc);
      if (n > 0) {
        check(wc);
        break;
      }
      if (deadline.expired()) timeout("a message");
    }
    post_receive(0);
  }

  // perftest's write latency: the last byte of our buffer changes when the peer's write lands.
  void wait_write_arrival() {
    SpinDeadline deadline(spec_.wait);
    volatile char* last = in() + bytes_ - 1;
    while (*last != static_cast<char>(seq_)) {
      if (deadline.expired()) timeout("a write");
    }
  }

  // send_bw: a fresh receive for every message that arrived (its data checked when asked).
  void repost_arrived_receives() {
    ibv_wc wc[32];
    const int n = ::ibv_poll_cq(pair_->recv_cq(), 32, wc);
    if (n < 0) throw InfraError(fmt::format("polling the receive queue failed (peer {})", peer_));
    for (int i = 0; i < n; ++i) {
      check(wc[i]);
      if (o_.validate) validation_errors_ += local_validation();
      post_receive(qp_index_of(wc[i].qp_num));
    }
  }

  bool control_readable() const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }

  bool control_says_done() {
    if (!control_readable()) return false;
    std::uint64_t done = 1;
    tcp::recv_all(fd_, &done, sizeof done, Deadline(spec_.wait));
    return true;
  }

  std::uint32_t local_validation() const {
    std::vector<char> copy;
    const char* data = in();
    if (gpu_) {
      copy.resize(bytes_);
      gpu_->read(0, copy.data(), bytes_);
      data = copy.data();
    }
    for (std::size_t i = 1; i + 1 < bytes_; ++i) {
      if (data[i] != pattern_byte(i, bytes_)) return 1;
    }
    return 0;
  }

  [[noreturn]] void timeout(const char* what) const {
    throw DeadlineExceeded(fmt::format("waited {} ms for {} from the peer {}", spec_.wait.count(), what, peer_));
  }

  ProbeSpec spec_;
  // The test, decided once: the ping-pong loops ask on every iteration.
  const bool write_lat_ = spec_.test == "write_lat", read_lat_ = spec_.test == "read_lat";
  VerbsProbeOptions o_;
  int fd_;
  std::string peer_;
  bool active_;
  std::unique_ptr<verbs::RcPair> pair_;  // the device, its CQs and the QPs, once connected
  char* in() const { return buf_; }
  char* out() const { return buf_ + stride_; }

  char* buf_ = nullptr;  // host memory, or gpu_'s device memory (never touched from the host then)
  std::unique_ptr<GpuBuffer> gpu_;
  std::size_t stride_ = 0;
  ibv_mr* mr_ = nullptr;
  std::size_t bytes_ = 0;
  BufferInfo remote_{};
  std::uint64_t seq_ = 0, posted_ = 0;
  std::size_t unreported_ = 0;        // unsignaled WRs posted since the last signaled one
  std::deque<std::size_t> covered_;  // per signaled WR still to complete, the messages it reports
  CounterSnapshot before_;
  // Bidirectional: the server's copy of the client's loop, its own figures, and whether send_bw's
  // receives must be reposted while this side sends.
  std::optional<DriverOptions> reverse_loop_;
  BandwidthFigures reverse_;
  bool receives_while_sending_ = o_.bidirectional && spec_.test == "send_bw";
  std::uint32_t validation_errors_ = 0;
};

std::string hello_of(const ProbeSpec& s) {
  return fmt::format("rocebench-verbs {} {} {}{}", s.test, s.verbs.connect, s.verbs.qps,
                     s.verbs.bidirectional ? " bidirectional" : "");
}

// Both sides agree on the test over the control socket before any verbs resource exists.
void handshake(int fd, const ProbeSpec& spec, bool client, const std::string& peer) {
  const Deadline deadline(spec.wait);
  std::string mine = hello_of(spec), theirs(64, '\0');
  mine.resize(64, '\0');
  tcp::send_all(fd, mine.data(), mine.size(), deadline);
  tcp::recv_all(fd, theirs.data(), theirs.size(), deadline);
  if (theirs != mine) {
    throw InputError(fmt::format("the {} {} runs '{}', this side '{}'", client ? "server" : "client", peer,
                                 theirs.c_str(), mine.c_str()));
  }
}

class VerbsServer final : public ProbeServer {
 public:
  VerbsServer(const ProbeSpec& spec, const std::string& address, int port) : spec_(spec) {
    spec_.verbs.device = pick_device(spec.verbs);
    fd_ = tcp::listen_on(address.empty() ? "0.0.0.0" : address, port, 1);
    if (spec_.verbs.connect == "cm") {
      listener_ = std::make_unique<verbs::CmListener>(address, tcp::local_port(fd_), spec_.verbs.qps);
    }
  }
  ~VerbsServer() override { ::close(fd_); }
  VerbsServer(const VerbsServer&) = delete;
  VerbsServer& operator=(const VerbsServer&) = delete;
  int port() const override { return tcp::local_port(fd_); }
  std::unique_ptr<Probe> accept() override {
    const int fd = tcp::accept_one(fd_, Deadline(spec_.wait));
    const std::string peer = tcp::peer_name(fd);
    auto probe = std::make_unique<VerbsProbe>(spec_, fd, peer, false);
    handshake(fd, spec_, false, peer);
    if (spec_.verbs.bidirectional) probe->exchange_loop();
    probe->accept_server(listener_.get());
    return probe;
  }

 private:
  ProbeSpec spec_;
  int fd_ = -1;
  std::unique_ptr<verbs::CmListener> listener_;  // cm: rdma_cm's listener on the same port
};

}  // namespace

json verbs_params(const ProbeSpec& spec) {
  const VerbsProbeOptions& o = spec.verbs;
  json p = {{"connect", o.connect}, {"ib_port", o.ib_port}, {"qps", o.qps}, {"tx_depth", spec.driver.tx_depth}};
  if (!o.device.empty()) p["device"] = o.device;
  if (o.gid_index >= 0) p["gid_index"] = o.gid_index;
  if (o.tos >= 0) p["tos"] = o.tos;
  if (o.bidirectional) p["bidirectional"] = true;
  if (o.validate) p["validate"] = true;
  if (o.gpu >= 0) p["gpu"] = o.gpu;
  return p;
}

std::string verbs_device(const ProbeSpec& spec) { return pick_device(spec.verbs); }

std::unique_ptr<ProbeServer> verbs_listen(const ProbeSpec& spec, const std::string& address, int port) {
  return std::make_unique<VerbsServer>(spec, address, port);
}

std::unique_ptr<Probe> verbs_connect(const ProbeSpec& spec, const std::string& host, int port) {
  ProbeSpec s = spec;
  s.verbs.device = pick_device(spec.verbs);
  const int fd = tcp::connect_to(host, port, Deadline(spec.wait));
  const std::string peer = fmt::format("{}:{}", host, port);
  auto probe = std::make_unique<VerbsProbe>(s, fd, peer, true);
  handshake(fd, s, true, peer);
  if (s.verbs.bidirectional) probe->exchange_loop();
  probe->connect_client(host, port);
  return probe;
}

}  // namespace rocebench::microbench
