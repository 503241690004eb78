// The point-to-point RC pair's device-free parts: the QP attributes it asks for, and what a host
// without an RDMA device, or with another one than named, makes of opening a port and connecting.
#include <gtest/gtest.h>

#include <unistd.h>

#include <future>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "rocebench/transport/verbs/pair.hpp"

using namespace rocebench;
using namespace rocebench::verbs;
using namespace std::chrono_literals;

TEST(RcQp, AttributesAskForTheDepthAndInlineBytesOnOneSge) {
  auto* send = reinterpret_cast<ibv_cq*>(0x10);
  auto* recv = reinterpret_cast<ibv_cq*>(0x20);
  const ibv_qp_init_attr a = rc_qp_init_attr(send, recv, 128, 220);
  EXPECT_EQ(a.send_cq, send);
  EXPECT_EQ(a.recv_cq, recv);
  EXPECT_EQ(a.qp_type, IBV_QPT_RC);
  EXPECT_EQ(a.cap.max_send_wr, 128u);
  EXPECT_EQ(a.cap.max_recv_wr, 128u);
  EXPECT_EQ(a.cap.max_send_sge, 1u);
  EXPECT_EQ(a.cap.max_recv_sge, 1u);
  EXPECT_EQ(a.cap.max_inline_data, 220u);
  EXPECT_EQ(rc_qp_init_attr(send, send, 34).cap.max_inline_data, 0u);
}

TEST(OpenPort, AnUnknownDeviceIsBadInputListingTheDevices) {
  VerbsOptions o;
  o.device = "mlx9_9";
  try {
    OpenPort port(o, "", "this host");
    FAIL() << "opened mlx9_9";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown RDMA device 'mlx9_9'"), std::string::npos) << e.what();
  }
}

TEST(OpenPort, NoDeviceIsUnavailableNamingTheHost) {
  if (!device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  try {
    OpenPort port(VerbsOptions{}, "", "host node-a");
    FAIL() << "opened a port without a device";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no RDMA device on host node-a"), std::string::npos) << e.what();
  }
}

// Both ends of an out-of-band connection learn it before anything crosses their socket.
TEST(RcPair, OutOfBandWithoutADeviceIsUnavailableOnBothSides) {
  if (!device_names().empty()) GTEST_SKIP() << "this host has an RDMA device";
  const int listener = tcp::listen_on("127.0.0.1", 0);
  auto server = std::async(std::launch::async, [&] {
    const int fd = tcp::accept_one(listener, Deadline(5s));
    try {
      connect_oob(fd, VerbsOptions{}, "127.0.0.1", PairOptions{}, Deadline(5s));
    } catch (...) {
      ::close(fd);
      throw;
    }
  });
  const int fd = tcp::connect_to("127.0.0.1", tcp::local_port(listener), Deadline(5s));
  try {
    connect_oob(fd, VerbsOptions{}, "127.0.0.1", PairOptions{}, Deadline(5s));
    FAIL() << "connected without a device";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("no RDMA device on this host"), std::string::npos) << e.what();
  }
  EXPECT_THROW(server.get(), Unavailable);
  ::close(fd);
  ::close(listener);
}
