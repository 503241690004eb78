#pragma once
// TCP sockets with deadlines, shared by the rendezvous, the TCP probes and the TCP transport.
// Every call that can block takes a Deadline and throws DeadlineExceeded when it passes; a closed
// or failed connection throws InfraError.
#include <chrono>
#include <cstddef>
#include <string>

#include "rocebench/common/clock.hpp"

namespace rocebench::tcp {

// A listening socket bound to exactly `address:port` (a literal or a host name; port 0 = any).
int listen_on(const std::string& address, int port, int backlog = 256);
// The port a socket is bound to.
int local_port(int fd);
// Connects, retrying while nobody listens yet, until the deadline. Sets TCP_NODELAY.
int connect_to(const std::string& address, int port, const Deadline& deadline);
// Accepts one connection before the deadline.
int accept_one(int listen_fd, const Deadline& deadline);

// Block until readable / writable or the deadline passes.
void wait_readable(int fd, const Deadline& deadline);
void wait_writable(int fd, const Deadline& deadline);

// How a call waits while the socket is not ready: asleep in poll() until the deadline (the default);
// asleep in the call itself, as on a blocking socket (one syscall per message, as sockperf and iperf3
// make them: the socket's own timeouts, set_timeouts, bound each sleep and the deadline is looked at
// when one passes); or spinning on the non-blocking call (no wake-up to pay; the deadline is read
// every 1024 tries).
enum class Wait { poll, block, spin };

void send_all(int fd, const void* data, std::size_t size, const Deadline& deadline, Wait how = Wait::poll);
void recv_all(int fd, void* data, std::size_t size, const Deadline& deadline, Wait how = Wait::poll);
// What has arrived, at least one byte and at most `size`, waiting for it as `how` says.
std::size_t recv_some(int fd, void* data, std::size_t size, const Deadline& deadline, Wait how = Wait::poll);
// What has arrived, at most `size` bytes, without waiting: 0 when nothing has.
std::size_t recv_ready(int fd, void* data, std::size_t size);
// SO_RCVTIMEO and SO_SNDTIMEO: how long one blocking call (Wait::block) sleeps before it returns.
void set_timeouts(int fd, std::chrono::milliseconds wait);

// "address:port" of the peer, for messages.
std::string peer_name(int fd);
// The numeric local IP address of a connected socket.
std::string local_address(int fd);
// Whether a connected socket's peer runs on this host: its address is a loopback one or the socket's own.
bool peer_on_this_host(int fd);
void set_nodelay(int fd);
// The TCP congestion control a connected socket runs ("unknown" if the kernel will not say).
std::string congestion_control(int fd);
// A TCP port free on `address` right now.
int pick_free_port(const std::string& address);

}  // namespace rocebench::tcp
