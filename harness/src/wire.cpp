#include "wire.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::wire {

namespace {

void wait_ready(int fd, short events, const Deadline& deadline) {
  pollfd p{fd, events, 0};
  while (true) {
    const int n = ::poll(&p, 1, deadline.remaining_ms());
    if (n > 0) return;
    if (n == 0) throw DeadlineExceeded("timed out on the rendezvous connection");
    if (errno != EINTR) throw InfraError(std::string("poll failed: ") + std::strerror(errno));
  }
}

void write_all(int fd, const char* data, std::size_t size, const Deadline& deadline) {
  while (size > 0) {
    wait_ready(fd, POLLOUT, deadline);
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw InfraError(std::string("connection lost while sending: ") + std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

void read_exact(int fd, char* data, std::size_t size, const Deadline& deadline) {
  while (size > 0) {
    wait_ready(fd, POLLIN, deadline);
    const ssize_t n = ::recv(fd, data, size, MSG_DONTWAIT);
    if (n == 0) throw InfraError("connection closed by the peer");
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) throw InfraError(std::string("connection lost while receiving: ") + std::strerror(errno));
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

std::string frame(const nlohmann::json& message) {
  const std::string body = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (body.size() > kMaxMessage) throw InfraError("rendezvous message too large");
  const auto n = static_cast<std::uint32_t>(body.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (24 - 8 * i)) & 0xff);
  return out + body;
}

std::uint32_t length_of(const char* header) {
  std::uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(header[i]);
  return n;
}

addrinfo* resolve(const std::string& address, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* result = nullptr;
  const int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &result);
  if (rc != 0) throw InputError(fmt::format("cannot resolve rendezvous address '{}': {}", address, gai_strerror(rc)));
  return result;
}

}  // namespace

void send(int fd, const nlohmann::json& message, const Deadline& deadline) {
  const std::string bytes = frame(message);
  write_all(fd, bytes.data(), bytes.size(), deadline);
}

nlohmann::json receive(int fd, const Deadline& deadline) {
  char header[4];
  read_exact(fd, header, 4, deadline);
  const std::uint32_t n = length_of(header);
  if (n > kMaxMessage) throw InfraError("rendezvous message too large (corrupt stream?)");
  std::string body(n, '\0');
  read_exact(fd, body.data(), n, deadline);
  try {
    return nlohmann::json::parse(body);
  } catch (const nlohmann::json::exception&) {
    throw InfraError("rendezvous peer sent a malformed message");
  }
}

bool read_available(int fd, std::string& buffer) {
  char chunk[65536];
  while (true) {
    const ssize_t n = ::recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
    if (n > 0) {
      buffer.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN || errno == EWOULDBLOCK;
  }
}

bool pop_message(std::string& buffer, nlohmann::json& message) {
  if (buffer.size() < 4) return false;
  const std::uint32_t n = length_of(buffer.data());
  if (n > kMaxMessage) throw InfraError("rendezvous message too large (corrupt stream?)");
  if (buffer.size() < 4 + n) return false;
  message = nlohmann::json::parse(buffer.substr(4, n));
  buffer.erase(0, 4 + n);
  return true;
}

int listen_on(const std::string& address, int port) {
  addrinfo* list = resolve(address, port, true);
  std::string last_error = "no usable address";
  for (addrinfo* a = list; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 256) == 0) {
      ::freeaddrinfo(list);
      return fd;
    }
    last_error = std::strerror(errno);
    ::close(fd);
  }
  ::freeaddrinfo(list);
  throw InfraError(fmt::format("rendezvous: cannot listen on {}:{}: {}", address, port, last_error));
}

int connect_to(const std::string& address, int port, const Deadline& deadline) {
  std::string last_error;
  while (true) {
    addrinfo* list = resolve(address, port, false);
    for (addrinfo* a = list; a; a = a->ai_next) {
      const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        ::freeaddrinfo(list);
        return fd;
      }
      last_error = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(list);
    if (deadline.expired()) {
      throw DeadlineExceeded(fmt::format("could not reach the rendezvous server (rank 0) at {}:{} before the deadline: {}",
                                         address, port, last_error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

std::string peer_name(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "?";
  char host[NI_MAXHOST], serv[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof host, serv, sizeof serv,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return std::string(host) + ":" + serv;
}

}  // namespace rocebench::wire
