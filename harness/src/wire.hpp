#pragma once
// Length-prefixed JSON messages over a TCP socket (transport/tcp/socket.hpp), for the rendezvous.
#include <string>

#include <nlohmann/json.hpp>

#include "rocebench/common/clock.hpp"

namespace rocebench::wire {

inline constexpr std::size_t kMaxMessage = 64u << 20;  // a record or a value; bigger is a bug

// Frame: 4-byte big-endian length, then the JSON text. Both throw InfraError on a closed or failed
// socket and DeadlineExceeded when the deadline passes first.
void send(int fd, const nlohmann::json& message, const Deadline& deadline);
nlohmann::json receive(int fd, const Deadline& deadline);

// Non-blocking receive for the server: appends what is readable to `buffer` and pops one whole
// message when there is one. Returns false when the peer closed the connection.
bool read_available(int fd, std::string& buffer);
bool pop_message(std::string& buffer, nlohmann::json& message);

}  // namespace rocebench::wire
