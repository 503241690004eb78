#include <gtest/gtest.h>
#include <signal.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "launch.hpp"
#include "rocebench/common/errors.hpp"
#include "rendezvous.hpp"
#include "wire.hpp"
#include "rocebench/transport/tcp/socket.hpp"

using namespace rocebench;
using namespace std::chrono_literals;

namespace {

struct Collected {
  std::mutex mutex;
  std::vector<json> records;
  StoreServer::Sink sink() {
    return {[this](const json& r) {
              std::lock_guard lock(mutex);
              records.push_back(r);
            },
            [] {}};
  }
  bool has_event(const std::string& name, const std::string& text) {
    std::lock_guard lock(mutex);
    for (const auto& r : records) {
      if (r.value("event", "") == name && r.value("message", "").find(text) != std::string::npos) return true;
    }
    return false;
  }
};

RendezvousAddress local_address() { return {"127.0.0.1", tcp::pick_free_port("127.0.0.1")}; }

}  // namespace

TEST(Rendezvous, EightRanksExchangeAndMeetAtBarriers) {
  const int world = 8;
  const auto address = local_address();
  Collected out;
  StoreServer server(address, "secret", world, "run-t", out.sink());
  server.start();
  std::vector<std::string> errors(world);
  std::vector<std::vector<std::string>> seen(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      try {
        StoreClient c(address, "secret", r, world, "host" + std::to_string(r), Deadline(10s));
        c.set("ep/" + std::to_string(r), "endpoint-of-" + std::to_string(r));
        for (int i = 0; i < 3; ++i) c.barrier("b", 10s);
        for (int p = 0; p < world; ++p) seen[r].push_back(c.get("ep/" + std::to_string(p), 10s));
        c.emit(event_record("run-t", "hello", "from " + std::to_string(r)));
        c.goodbye();
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < world; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    ASSERT_EQ(seen[r].size(), static_cast<std::size_t>(world));
    for (int p = 0; p < world; ++p) EXPECT_EQ(seen[r][p], "endpoint-of-" + std::to_string(p));
  }
  EXPECT_TRUE(server.wait_finished(Deadline(5s)));
  EXPECT_TRUE(server.lost_ranks().empty());
  EXPECT_EQ(out.records.size(), static_cast<std::size_t>(world));
}

TEST(Rendezvous, ClientWithoutTheTokenIsRefusedAndLogged) {
  const auto address = local_address();
  Collected out;
  StoreServer server(address, "right-token", 2, "run-t", out.sink());
  server.start();
  try {
    StoreClient intruder(address, "wrong-token", 0, 2, "intruder", Deadline(5s));
    FAIL() << "a client with the wrong token was accepted";
  } catch (const InfraError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong or missing run token"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(out.has_event("rendezvous.refused", "wrong or missing run token"));
  // The refused client took no rank: the real rank 0 still joins.
  StoreClient rank0(address, "right-token", 0, 2, "h0", Deadline(5s));
  rank0.set("k", "v");
}

TEST(Rendezvous, JunkIsRefusedAndLoggedWithThePeersAddress) {
  const auto address = local_address();
  Collected out;
  StoreServer server(address, "t", 1, "run-t", out.sink());
  server.start();
  const int fd = tcp::connect_to(address.host, address.port, Deadline(5s));
  const std::string junk = "GET / HTTP/1.0\r\nHost: \x01\x02\r\n\r\n" + std::string(100000, 'A');
  [[maybe_unused]] auto n = ::write(fd, junk.data(), junk.size());
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (!out.has_event("rendezvous.refused", "refused a client from 127.0.0.1:") && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(10ms);
  }
  ::close(fd);
  EXPECT_TRUE(out.has_event("rendezvous.refused", "sent a malformed request")) << "junk was refused without a record";
  StoreClient rank0(address, "t", 0, 1, "h0", Deadline(5s));  // the server still serves
  rank0.set("k", "v");
}

TEST(Rendezvous, MissingRankIsNamedWhenTheDeadlinePasses) {
  const auto address = local_address();
  Collected out;
  StoreServer server(address, "t", 3, "run-t", out.sink());
  server.start();
  StoreClient a(address, "t", 0, 3, "h0", Deadline(5s));
  StoreClient b(address, "t", 1, 3, "h1", Deadline(5s));
  std::string error_a;
  std::thread ta([&] {
    try {
      a.barrier("start", 300ms);
    } catch (const DeadlineExceeded& e) {
      error_a = e.what();
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(b.barrier("start", 300ms), DeadlineExceeded);
  ta.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_NE(error_a.find("rank 2 (never connected)"), std::string::npos) << error_a;
}

TEST(Rendezvous, KilledRankIsReportedByRankAndHost) {
  const auto address = local_address();
  // The doomed rank is forked before any thread exists; it joins, says so, then dies without a goodbye.
  int go[2], joined[2];
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(joined), 0);
  const pid_t doomed = ::fork();
  if (doomed == 0) {
    try {
      StoreClient c(address, "t", 2, 3, "node-c", Deadline(10s));
      [[maybe_unused]] auto w = ::write(joined[1], "j", 1);
      char byte;
      [[maybe_unused]] auto n = ::read(go[0], &byte, 1);
      ::kill(::getpid(), SIGKILL);
    } catch (...) {
    }
    ::_exit(9);
  }
  Collected out;
  StoreServer server(address, "t", 3, "run-t", out.sink());
  server.start();
  StoreClient a(address, "t", 0, 3, "node-a", Deadline(5s));
  StoreClient b(address, "t", 1, 3, "node-b", Deadline(5s));
  pollfd rank2_joined{joined[0], POLLIN, 0};
  ASSERT_EQ(::poll(&rank2_joined, 1, 10000), 1) << "rank 2 never joined";
  std::string error_b;
  std::thread tb([&] {
    try {
      b.barrier("work", 30s);
    } catch (const InfraError& e) {
      error_b = e.what();
    }
  });
  const auto t0 = std::chrono::steady_clock::now();
  [[maybe_unused]] auto n = ::write(go[1], "x", 1);
  std::string error_a;
  try {
    a.barrier("work", 30s);
  } catch (const InfraError& e) {
    error_a = e.what();
  }
  tb.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "the loss was not noticed promptly";
  EXPECT_NE(error_a.find("rank 2 on host node-c was lost"), std::string::npos) << error_a;
  EXPECT_NE(error_b.find("rank 2 on host node-c was lost"), std::string::npos) << error_b;
  EXPECT_TRUE(out.has_event("rank.lost", "rank 2 on host node-c"));
  int status = 0;
  ::waitpid(doomed, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status));
}

// fuzz_wire: a whole frame that is not JSON threw nlohmann's parse_error, not the InfraError of its contract.
TEST(Wire, AFrameThatIsNotJsonIsAMalformedMessage) {
  std::string buffer("\0\0\0\x05{nope", 9);
  json message;
  EXPECT_THROW(wire::pop_message(buffer, message), InfraError);
  std::string half("\0\0\0\x09{\"a\":", 9);
  EXPECT_FALSE(wire::pop_message(half, message)) << "a frame not yet whole waits";
}
