#pragma once
// The one interface algorithms are written against (Gloo's pattern): point-to-point messages
// between ranks, posted without blocking and completed by wait() with a deadline. Algorithms never
// see a socket or a queue pair.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/record.hpp"

namespace rocebench::transport {

using Request = std::uint64_t;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual std::string name() const = 0;  // "tcp", "verbs"
  // Settings that shape the figures, as they took effect, for each record's params (tcp: congestion
  // control, send buffer, sockets per peer, spin before sleeping).
  virtual json settings() const { return json::object(); }

  // Messages between two ranks arrive in the order they were posted, per direction; a receive is
  // posted with the size of its matching send. The buffer must stay valid until the request is done.
  virtual Request send(int peer, const void* data, std::size_t bytes) = 0;
  virtual Request recv(int peer, void* data, std::size_t bytes) = 0;

  // Makes progress until every request is done. Throws InfraError naming the peer (rank and host)
  // when a connection fails, DeadlineExceeded naming the peers still owed data when time is up.
  virtual void wait(std::span<const Request> requests, const Deadline& deadline) = 0;
  void wait(Request request, const Deadline& deadline) { wait(std::span<const Request>(&request, 1), deadline); }
};

}  // namespace rocebench::transport
