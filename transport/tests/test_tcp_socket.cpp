// The TCP socket calls' three ways of waiting (poll, blocking call, spinning) on a loopback connection:
// whole messages and partial reads, a silent peer ending the wait at the deadline, a closed peer named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"

using namespace rocebench;
using namespace std::chrono_literals;
using tcp::Wait;

namespace {

// Both ends of one loopback connection.
struct Connection {
  Connection() {
    const int listener = tcp::listen_on("127.0.0.1", 0);
    client = tcp::connect_to("127.0.0.1", tcp::local_port(listener), Deadline(5s));
    server = tcp::accept_one(listener, Deadline(5s));
    ::close(listener);
  }
  ~Connection() {
    if (client >= 0) ::close(client);
    if (server >= 0) ::close(server);
  }
  int client = -1, server = -1;
};

double seconds_since(std::int64_t t0) { return static_cast<double>(now_ns() - t0) / 1e9; }

}  // namespace

TEST(TcpSocket, EveryWayOfWaitingMovesWholeMessages) {
  for (const Wait how : {Wait::poll, Wait::block, Wait::spin}) {
    Connection c;
    tcp::set_timeouts(c.client, 2s);
    tcp::set_timeouts(c.server, 2s);
    // Larger than the socket buffers: the sender waits for room, the receiver for data.
    std::vector<char> sent(8 << 20), got(sent.size());
    std::iota(sent.begin(), sent.end(), 0);
    std::thread sender([&] { tcp::send_all(c.client, sent.data(), sent.size(), Deadline(10s), how); });
    tcp::recv_all(c.server, got.data(), got.size(), Deadline(10s), how);
    sender.join();
    EXPECT_EQ(got, sent) << static_cast<int>(how);
  }
}

TEST(TcpSocket, RecvSomeTakesWhatHasArrivedAndRecvReadyNeverWaits) {
  Connection c;
  char buf[64] = {};
  EXPECT_EQ(tcp::recv_ready(c.server, buf, sizeof buf), 0u);
  tcp::send_all(c.client, "hello", 5, Deadline(1s));
  EXPECT_EQ(tcp::recv_some(c.server, buf, sizeof buf, Deadline(1s)), 5u);
  EXPECT_EQ(std::string(buf, 5), "hello");
  tcp::send_all(c.client, "abc", 3, Deadline(1s));
  std::size_t n = 0;
  const Deadline deadline(1s);
  while (n == 0 && !deadline.expired()) n = tcp::recv_ready(c.server, buf, sizeof buf);
  EXPECT_EQ(n, 3u);
}

TEST(TcpSocket, ASilentPeerEndsEveryWayOfWaitingAtTheDeadline) {
  for (const Wait how : {Wait::poll, Wait::block, Wait::spin}) {
    Connection c;
    tcp::set_timeouts(c.server, 200ms);  // what a blocking call sleeps before the deadline is looked at
    char byte = 0;
    const auto t0 = now_ns();
    EXPECT_THROW(tcp::recv_all(c.server, &byte, 1, Deadline(200ms), how), DeadlineExceeded) << static_cast<int>(how);
    EXPECT_GE(seconds_since(t0), 0.19) << static_cast<int>(how);
    EXPECT_LT(seconds_since(t0), 3.0) << static_cast<int>(how);
  }
}

TEST(TcpSocket, APeerThatClosesIsNamed) {
  for (const Wait how : {Wait::poll, Wait::block, Wait::spin}) {
    Connection c;
    tcp::set_timeouts(c.server, 2s);
    const int port = tcp::local_port(c.client);
    ::close(c.client);
    c.client = -1;
    char byte = 0;
    try {
      tcp::recv_some(c.server, &byte, 1, Deadline(2s), how);
      FAIL() << "read from a closed connection";
    } catch (const DeadlineExceeded& e) {
      FAIL() << e.what();
    } catch (const InfraError& e) {
      EXPECT_NE(std::string(e.what()).find(fmt::format("closed by the peer 127.0.0.1:{}", port)), std::string::npos)
          << e.what();
    }
  }
}
