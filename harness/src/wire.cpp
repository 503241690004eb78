#include "wire.hpp"

#include <sys/socket.h>

#include <cerrno>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/json_depth.hpp"
#include "rocebench/transport/tcp/socket.hpp"

namespace rocebench::wire {

namespace {

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

}  // namespace

void send(int fd, const nlohmann::json& message, const Deadline& deadline) {
  const std::string bytes = frame(message);
  tcp::send_all(fd, bytes.data(), bytes.size(), deadline);
}

nlohmann::json receive(int fd, const Deadline& deadline) {
  char header[4];
  tcp::recv_all(fd, header, 4, deadline);
  const std::uint32_t n = length_of(header);
  if (n > kMaxMessage) throw InfraError("rendezvous message too large (corrupt stream?)");
  std::string body(n, '\0');
  tcp::recv_all(fd, body.data(), n, deadline);
  if (json_too_deep_at(body) != std::string::npos) throw InfraError("rendezvous peer sent a message nested too deeply");
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
  if (json_too_deep_at(std::string_view(buffer).substr(4, n)) != std::string_view::npos)
    throw InfraError("rendezvous peer sent a message nested too deeply");
  try {
    message = nlohmann::json::parse(buffer.substr(4, n));
  } catch (const nlohmann::json::exception&) {
    throw InfraError("rendezvous peer sent a malformed message");
  }
  buffer.erase(0, 4 + n);
  return true;
}

}  // namespace rocebench::wire
