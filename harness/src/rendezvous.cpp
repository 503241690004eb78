#include "rendezvous.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <utility>
#include <iostream>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "wire.hpp"

namespace rocebench {

namespace {

constexpr auto kHelloTimeout = std::chrono::seconds(10);
// The client waits this much longer than the server's own deadline, so the server's answer (which
// names the missing ranks) normally arrives first.
constexpr auto kClientGrace = std::chrono::seconds(5);

json error_reply(const std::string& kind, const std::string& message) {
  return {{"ok", false}, {"kind", kind}, {"error", message}};
}

}  // namespace

struct StoreServer::Connection {
  int fd = -1;
  std::string peer;
  std::string buffer;
  int rank = -1;  // -1 until a valid hello
  Deadline hello_deadline{kHelloTimeout};
  bool closed = false;
};

struct StoreServer::Waiter {
  Connection* connection;
  bool is_barrier;
  std::string key;  // the key, or the barrier's name
  Deadline deadline;
  double timeout_s;
};

StoreServer::StoreServer(RendezvousAddress address, std::string token, int world, std::string run_id, Sink sink)
    : address_(std::move(address)), token_(std::move(token)), world_(world), run_id_(std::move(run_id)),
      sink_(std::move(sink)) {}

StoreServer::~StoreServer() {
  if (thread_.joinable()) {
    const char stop = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_[1], &stop, 1);
    thread_.join();
  }
  for (int fd : {listen_fd_, wake_fd_[0], wake_fd_[1]}) {
    if (fd >= 0) ::close(fd);
  }
}

void StoreServer::start() {
  listen_fd_ = tcp::listen_on(address_.host, address_.port);
  if (::pipe2(wake_fd_, O_CLOEXEC) != 0) throw InfraError("rendezvous: pipe2 failed");
  thread_ = std::thread([this] { serve(); });
}

bool StoreServer::wait_finished(const Deadline& deadline) {
  std::unique_lock lock(mutex_);
  return done_cv_.wait_for(lock, std::chrono::milliseconds(deadline.remaining_ms()), [this] { return done_; });
}

std::vector<std::string> StoreServer::lost_ranks() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [rank, why] : lost_) out.push_back(why);
  return out;
}

std::string StoreServer::rank_name(int rank) const {
  auto it = hosts_.find(rank);
  return it == hosts_.end() ? fmt::format("rank {} (never connected)", rank)
                            : fmt::format("rank {} on host {}", rank, it->second);
}

std::string StoreServer::describe_missing(const std::set<int>& present) const {
  std::vector<std::string> missing;
  for (int r = 0; r < world_; ++r) {
    if (!present.count(r)) missing.push_back(rank_name(r));
  }
  return fmt::format("{}", fmt::join(missing, ", "));
}

void StoreServer::event(const std::string& name, const std::string& message, json details) {
  std::cerr << "rocebench rendezvous: " << message << "\n";
  try {
    sink_.write_record(event_record(run_id_, name, message, std::move(details)));
  } catch (const std::exception& e) {
    std::cerr << "rocebench rendezvous: could not record the event: " << e.what() << "\n";
  }
}

void StoreServer::record_refusal(const Connection& c, const std::string& why) {
  event("rendezvous.refused", fmt::format("refused a client from {}: {}", c.peer, why), {{"peer", c.peer}});
}

void StoreServer::reply(Connection& c, const json& message) {
  if (c.closed) return;
  try {
    wire::send(c.fd, message, Deadline(std::chrono::seconds(10)));
  } catch (const InfraError& e) {
    drop(c, e.what());
  }
}

void StoreServer::drop(Connection& c, const std::string& why) {
  if (c.closed) return;
  // Waiters of this connection are dropped by the serve loop: this may run inside settle_waiters().
  c.closed = true;
  ::close(c.fd);
  if (c.rank < 0 || finished_.count(c.rank)) return;
  const std::string message = fmt::format("{} was lost: {}", rank_name(c.rank), why);
  {
    std::lock_guard lock(mutex_);
    lost_[c.rank] = message;
  }
  event("rank.lost", message, {{"rank", c.rank}, {"host", hosts_[c.rank]}});
}

void StoreServer::accept_one() {
  const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  auto c = std::make_unique<Connection>();
  c->fd = fd;
  c->peer = tcp::peer_name(fd);
  connections_.push_back(std::move(c));
}

void StoreServer::handle(Connection& c, const json& message) {
  const std::string op = message.value("op", "");
  if (c.rank < 0) {
    std::string why;
    const int rank = message.value("rank", -1);
    if (op != "hello") why = "first message was not a hello";
    else if (message.value("token", "") != token_) why = "wrong or missing run token";
    else if (rank < 0 || rank >= world_) why = fmt::format("rank {} is outside the world of {}", rank, world_);
    else if (hosts_.count(rank)) why = fmt::format("rank {} has already joined", rank);
    else if (message.value("world", -1) != world_) why = fmt::format("world size {} differs from the run's {}", message.value("world", -1), world_);
    if (!why.empty()) {
      record_refusal(c, why);  // before the answer, so the record exists by the time the client knows
      reply(c, error_reply("refused", why));
      drop(c, why);
      return;
    }
    c.rank = rank;
    hosts_[rank] = message.value("host", "?");
    reply(c, {{"ok", true}});
    return;
  }

  if (op == "set") {
    values_[message.at("key").get<std::string>()] = message.at("value").get<std::string>();
    reply(c, {{"ok", true}});
    settle_waiters();
  } else if (op == "get" || op == "barrier") {
    const bool is_barrier = op == "barrier";
    const std::string key = message.at(is_barrier ? "name" : "key").get<std::string>();
    if (is_barrier) barriers_[key].insert(c.rank);
    const double timeout_s = message.value("timeout_ms", 60000) / 1000.0;
    waiters_.push_back({&c, is_barrier, key, Deadline::after_seconds(timeout_s), timeout_s});
    settle_waiters();
  } else if (op == "record") {
    sink_.write_record(message.at("record"));
    reply(c, {{"ok", true}});
  } else if (op == "end_step") {
    sink_.end_step();
    reply(c, {{"ok", true}});
  } else if (op == "lost") {
    reply(c, {{"ok", true}, {"lost", lost_ranks()}});
  } else if (op == "bye") {
    finished_.insert(c.rank);
    reply(c, {{"ok", true}});
  } else {
    reply(c, error_reply("bad", "unknown operation '" + op + "'"));
  }
}

void StoreServer::settle_waiters() {
  std::string lost_message;
  {
    std::lock_guard lock(mutex_);
    if (!lost_.empty()) lost_message = lost_.begin()->second;
  }
  std::vector<Waiter> pending;
  for (auto& w : std::exchange(waiters_, {})) {
    Connection& c = *w.connection;
    if (c.closed) continue;
    if (!w.is_barrier && values_.count(w.key)) {
      reply(c, {{"ok", true}, {"value", values_[w.key]}});
    } else if (w.is_barrier && static_cast<int>(barriers_[w.key].size()) == world_) {
      reply(c, {{"ok", true}});
    } else if (!lost_message.empty()) {
      reply(c, error_reply("lost", lost_message));
    } else {
      pending.push_back(w);
    }
  }
  waiters_ = std::move(pending);
}

void StoreServer::expire_waiters() {
  std::vector<Waiter> pending;
  for (auto& w : std::exchange(waiters_, {})) {
    if (w.connection->closed) continue;
    if (!w.deadline.expired()) {
      pending.push_back(w);
      continue;
    }
    const std::string message =
        w.is_barrier ? fmt::format("deadline of {:g} s passed at barrier '{}'; missing: {}", w.timeout_s, w.key,
                                   describe_missing(barriers_[w.key]))
                     : fmt::format("deadline of {:g} s passed waiting for key '{}'", w.timeout_s, w.key);
    reply(*w.connection, error_reply("deadline", message));
  }
  waiters_ = std::move(pending);
}

void StoreServer::serve() {
  while (true) {
    std::vector<pollfd> fds{{wake_fd_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    int timeout_ms = 1000;
    for (const auto& c : connections_) {
      fds.push_back({c->fd, POLLIN, 0});
      if (c->rank < 0) timeout_ms = std::min(timeout_ms, c->hello_deadline.remaining_ms() + 1);
    }
    for (const auto& w : waiters_) timeout_ms = std::min(timeout_ms, w.deadline.remaining_ms() + 1);
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) break;
    if (fds[0].revents) break;  // asked to stop
    if (fds[1].revents & POLLIN) accept_one();

    for (std::size_t i = 2; i < fds.size(); ++i) {
      Connection& c = *connections_[i - 2];
      if (!fds[i].revents) continue;
      const bool open = wire::read_available(c.fd, c.buffer);
      try {
        json message;
        while (!c.closed && wire::pop_message(c.buffer, message)) handle(c, message);
      } catch (const std::exception& e) {
        const std::string what = printable_excerpt(e.what());
        if (c.rank < 0) record_refusal(c, "sent a malformed request: " + what);
        reply(c, error_reply("bad", "malformed request: " + what));
        drop(c, "sent a malformed request: " + what);
      }
      if (!open) drop(c, "its connection closed without a goodbye (process died or the network failed)");
    }
    for (auto& c : connections_) {
      if (c->rank < 0 && !c->closed && c->hello_deadline.expired()) {
        record_refusal(*c, fmt::format("no hello within {} s", kHelloTimeout.count()));
        drop(*c, "no hello");
      }
    }
    settle_waiters();  // a rank lost in this round fails everyone's waits
    expire_waiters();
    std::erase_if(connections_, [](const auto& c) { return c->closed; });

    std::lock_guard lock(mutex_);
    if (static_cast<int>(finished_.size() + lost_.size()) >= world_) {
      done_ = true;
      done_cv_.notify_all();
    }
  }
  for (auto& c : connections_) {
    if (!c->closed) ::close(c->fd);
  }
  connections_.clear();
  std::lock_guard lock(mutex_);
  done_ = true;
  done_cv_.notify_all();
}

StoreClient::StoreClient(const RendezvousAddress& address, const std::string& token, int rank, int world,
                         const std::string& host, const Deadline& connect_deadline)
    : address_(address), rank_(rank), world_(world) {
  fd_ = tcp::connect_to(address.host, address.port, connect_deadline);
  const json reply = request({{"op", "hello"}, {"token", token}, {"rank", rank}, {"world", world}, {"host", host},
                              {"pid", ::getpid()}},
                             std::chrono::seconds(10));
  (void)reply;
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

json StoreClient::request(json message, std::chrono::milliseconds timeout) {
  std::lock_guard lock(mutex_);
  const Deadline deadline(timeout + kClientGrace);
  json reply;
  try {
    wire::send(fd_, message, deadline);
    reply = wire::receive(fd_, deadline);
  } catch (const DeadlineExceeded&) {
    throw DeadlineExceeded(fmt::format("rank {}: the rendezvous server (rank 0 at {}:{}) did not answer '{}' in time",
                                       rank_, address_.host, address_.port, message.value("op", "")));
  } catch (const InfraError& e) {
    throw InfraError(fmt::format("rank {}: lost the rendezvous server (rank 0 at {}:{}): {}", rank_, address_.host,
                                 address_.port, e.what()));
  }
  if (reply.value("ok", false)) return reply;
  const std::string kind = reply.value("kind", "");
  const std::string error = fmt::format("rank {}: {}", rank_, reply.value("error", "rendezvous request failed"));
  if (kind == "deadline") throw DeadlineExceeded(error);
  throw InfraError(error);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  request({{"op", "set"}, {"key", key}, {"value", value}}, std::chrono::seconds(30));
}

std::string StoreClient::get(const std::string& key, std::chrono::milliseconds timeout) {
  return request({{"op", "get"}, {"key", key}, {"timeout_ms", timeout.count()}}, timeout).at("value").get<std::string>();
}

void StoreClient::barrier(const std::string& name, std::chrono::milliseconds timeout) {
  // Every rank passes the same barriers in the same order, so a per-name count makes reuse safe.
  const std::string unique = fmt::format("{}#{}", name, barrier_generation_[name]++);
  request({{"op", "barrier"}, {"name", unique}, {"timeout_ms", timeout.count()}}, timeout);
}

void StoreClient::emit(const json& record) { request({{"op", "record"}, {"record", record}}, std::chrono::seconds(30)); }

void StoreClient::end_step() { request({{"op", "end_step"}}, std::chrono::seconds(30)); }

std::vector<std::string> StoreClient::lost_ranks() {
  return request({{"op", "lost"}}, std::chrono::seconds(10)).at("lost").get<std::vector<std::string>>();
}

std::string StoreClient::local_address() const { return tcp::local_address(fd_); }

void StoreClient::goodbye() { request({{"op", "bye"}}, std::chrono::seconds(30)); }

}  // namespace rocebench
