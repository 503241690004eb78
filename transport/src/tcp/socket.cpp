#include "rocebench/transport/tcp/socket.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::tcp {

namespace {

[[noreturn]] void timed_out(int fd) {
  throw DeadlineExceeded(fmt::format("timed out waiting on the connection to {}", peer_name(fd)));
}

void wait_ready(int fd, short events, const Deadline& deadline) {
  pollfd p{fd, events, 0};
  while (true) {
    const int n = ::poll(&p, 1, deadline.remaining_ms());
    if (n > 0) return;
    if (n == 0) timed_out(fd);
    if (errno != EINTR) throw InfraError(std::string("poll failed: ") + std::strerror(errno));
  }
}

// One send / recv: the bytes it moved, 0 when the socket was not ready (a blocking one: its timeout
// passed first). Wait::block makes the blocking call, the others the non-blocking one.
std::size_t try_send(int fd, const void* data, std::size_t size, Wait how) {
  while (true) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | (how == Wait::block ? 0 : MSG_DONTWAIT));
    if (n > 0) return static_cast<std::size_t>(n);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    throw InfraError(fmt::format("connection to {} lost while sending: {}", peer_name(fd), std::strerror(errno)));
  }
}

std::size_t try_recv(int fd, void* data, std::size_t size, Wait how) {
  while (true) {
    const ssize_t n = ::recv(fd, data, size, how == Wait::block ? 0 : MSG_DONTWAIT);
    if (n > 0) return static_cast<std::size_t>(n);
    if (n == 0) throw InfraError(fmt::format("connection closed by the peer {}", peer_name(fd)));
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    throw InfraError(fmt::format("connection to {} lost while receiving: {}", peer_name(fd), std::strerror(errno)));
  }
}

// `io` (a try_send or try_recv) repeated until it moves a byte or more; while the socket is not
// ready, poll() waits for it, or the deadline is looked at (a blocking call: whenever its timeout
// passed; spinning: every 1024th try).
template <typename Io>
std::size_t move_some(int fd, short events, const Deadline& deadline, Wait how, Io io) {
  for (std::uint32_t tries = 1;; ++tries) {
    if (const std::size_t n = io()) return n;
    if (how == Wait::poll) wait_ready(fd, events, deadline);
    else if ((how == Wait::block || tries % 1024 == 0) && deadline.expired()) timed_out(fd);
  }
}

addrinfo* resolve(const std::string& address, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) throw InputError(fmt::format("cannot resolve address '{}': {}", address, gai_strerror(rc)));
  return result;
}

// The numeric IP address and port of a socket's own end, or of its peer's; nothing if the kernel will
// not say (a peer's, once the connection is reset).
struct Endpoint {
  std::string host, port;
};
std::optional<Endpoint> numeric_endpoint(int fd, bool of_peer) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  char host[NI_MAXHOST], port[NI_MAXSERV];
  const int rc = of_peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                         : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0 || ::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, port, sizeof port,
                               NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return std::nullopt;
  }
  return Endpoint{host, port};
}

}  // namespace

void wait_readable(int fd, const Deadline& deadline) { wait_ready(fd, POLLIN, deadline); }
void wait_writable(int fd, const Deadline& deadline) { wait_ready(fd, POLLOUT, deadline); }

void send_all(int fd, const void* data, std::size_t size, const Deadline& deadline, Wait how) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const std::size_t n = move_some(fd, POLLOUT, deadline, how, [&] { return try_send(fd, p, size, how); });
    p += n;
    size -= n;
  }
}

void recv_all(int fd, void* data, std::size_t size, const Deadline& deadline, Wait how) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const std::size_t n = recv_some(fd, p, size, deadline, how);
    p += n;
    size -= n;
  }
}

std::size_t recv_some(int fd, void* data, std::size_t size, const Deadline& deadline, Wait how) {
  return move_some(fd, POLLIN, deadline, how, [&] { return try_recv(fd, data, size, how); });
}

std::size_t recv_ready(int fd, void* data, std::size_t size) { return try_recv(fd, data, size, Wait::poll); }

void set_timeouts(int fd, std::chrono::milliseconds wait) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(wait.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((wait.count() % 1000) * 1000);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

int listen_on(const std::string& address, int port, int backlog) {
  addrinfo* list = resolve(address, port, true);
  std::string last_error = "no usable address";
  for (addrinfo* a = list; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) {
      ::freeaddrinfo(list);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(list);
  throw InfraError(fmt::format("cannot listen on {}:{}: {}", address, port, last_error));
}

int local_port(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  // sin_port and sin6_port sit at the same offset.
  return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

void set_nodelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::string congestion_control(int fd) {
  char name[16] = {};  // TCP_CA_NAME_MAX in <linux/tcp.h>
  socklen_t length = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) != 0) return "unknown";
  return std::string(name, strnlen(name, sizeof name));
}

int connect_to(const std::string& address, int port, const Deadline& deadline) {
  std::string last_error;
  while (true) {
    addrinfo* list = resolve(address, port, false);
    for (addrinfo* a = list; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        set_nodelay(fd);
        ::freeaddrinfo(list);
        return fd;
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(list);
    if (deadline.expired()) {
      throw DeadlineExceeded(fmt::format("could not connect to {}:{} before the deadline: {}", address, port, last_error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int accept_one(int listen_fd, const Deadline& deadline) {
  while (true) {
    wait_readable(listen_fd, deadline);
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      set_nodelay(fd);
      return fd;
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      throw InfraError(std::string("accept failed: ") + std::strerror(errno));
    }
  }
}

std::string peer_name(int fd) {
  const auto peer = numeric_endpoint(fd, true);
  // A reset connection or a listener has no peer address left: name our own end instead of "?".
  if (!peer) return fmt::format("the peer of {}:{} (not connected)", local_address(fd), local_port(fd));
  return peer->host + ":" + peer->port;
}

bool peer_on_this_host(int fd) {
  const auto peer = numeric_endpoint(fd, true), own = numeric_endpoint(fd, false);
  if (!peer) return false;
  const std::string& host = peer->host;
  const bool loopback = host.rfind("127.", 0) == 0 || host == "::1" || host.rfind("::ffff:127.", 0) == 0;
  return loopback || (own && host == own->host);
}

std::string local_address(int fd) {
  const auto own = numeric_endpoint(fd, false);
  return own ? own->host : "?";
}

int pick_free_port(const std::string& address) {
  const int fd = listen_on(address, 0);
  const int port = local_port(fd);
  ::close(fd);
  return port;
}

}  // namespace rocebench::tcp
