// The TCP probes for real, on loopback: a server thread and a client in this process.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <future>
#include <thread>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/microbench/probe.hpp"

using namespace rocebench;
using namespace rocebench::microbench;

namespace {

ProbeSpec tcp_spec(const std::string& test, std::vector<std::size_t> sizes, int iterations, const std::string& mode = "") {
  ProbeSpec s;
  s.test = test;
  s.mode = mode;
  s.driver.sizes = std::move(sizes);
  s.driver.iterations = iterations;
  s.driver.warmup = 5;
  s.wait = std::chrono::milliseconds(5000);
  return s;
}

// Runs both sides; returns the client's records.
std::vector<ResultRecord> run_pair(const ProbeSpec& spec) {
  auto server = listen_probe(spec, "127.0.0.1", 0);
  auto served = std::async(std::launch::async, [&] { return run_passive(*server->accept()); });
  std::vector<ResultRecord> out;
  auto probe = connect_probe(spec, "127.0.0.1", server->port());
  run_active(*probe, spec.driver, [&](const ResultRecord& r) { out.push_back(r); });
  EXPECT_EQ(served.get(), static_cast<int>(spec.driver.sizes.size()));
  return out;
}

void expect_valid(ResultRecord r) {
  r.host = "localhost";
  const json j = to_json(r, "test-run");
  const auto errors = result_schema().validate(j);
  EXPECT_TRUE(errors.empty()) << j.dump() << "\n" << (errors.empty() ? "" : errors.front().pointer + ": " + errors.front().message);
}

}  // namespace

TEST(TcpProbe, LatencyPingPongInBothModes) {
  for (const std::string mode : {"busy", "blocking"}) {
    const auto records = run_pair(tcp_spec("lat", {2, 4096}, 200, mode));
    ASSERT_EQ(records.size(), 2u);
    for (const auto& r : records) {
      EXPECT_EQ(r.step, "microbench.probe");
      EXPECT_EQ(r.params["transport"], "tcp");
      EXPECT_EQ(r.params["test"], "lat");
      EXPECT_EQ(r.params["mode"], mode);
      EXPECT_EQ(r.samples["n"], 198);  // 200 iterations, perftest drops the 2 largest
      ASSERT_EQ(r.samples["values"].size(), 200u);  // the raw samples keep every iteration
      EXPECT_EQ(r.samples["values_every"], 1);
      EXPECT_EQ(r.samples["metric"], "lat_us_p50");
      const auto values = r.samples["values"].get<std::vector<double>>();
      EXPECT_NEAR(*std::min_element(values.begin(), values.end()), r.metrics["lat_us_min"].get<double>(), 1e-3);
      EXPECT_GT(r.metrics["lat_us_min"].get<double>(), 0);
      EXPECT_LE(r.metrics["lat_us_min"].get<double>(), r.metrics["lat_us_p50"].get<double>());
      EXPECT_LE(r.metrics["lat_us_p50"].get<double>(), r.metrics["lat_us_p99"].get<double>());
      expect_valid(r);
    }
    EXPECT_EQ(records[1].params["bytes"], 4096);
  }
}

TEST(TcpProbe, LatencyRecordsThinTheirRawSamplesPastTenThousand) {
  const auto records = run_pair(tcp_spec("lat", {2}, 12000, "blocking"));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].samples["n"], 11998);
  EXPECT_EQ(records[0].samples["values_every"], 2);  // every 2nd of 12000
  EXPECT_EQ(records[0].samples["values"].size(), 6000u);
  expect_valid(records[0]);
}

TEST(TcpProbe, BandwidthCountsEveryMessage) {
  // A 4 MiB message arrives in many reads: the receiver must wait for all of the last one before
  // the next size starts, or the next size reads the tail of this one.
  const auto records = run_pair(tcp_spec("bw", {64, 4u << 20, 65536}, 60));
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r.params["mode"], "blocking");
    EXPECT_EQ(r.samples["messages"], 60);
    const double avg = r.metrics["bw_avg_Gbps"], peak = r.metrics["bw_peak_Gbps"];
    EXPECT_GT(avg, 0);
    EXPECT_GE(peak, avg * 0.999);
    EXPECT_NEAR(r.metrics["msg_rate_Mpps"].get<double>() * 1e6 * 8 * r.params["bytes"].get<double>() / 1e9, avg, avg * 1e-6);
    std::string host_congestion;
    std::getline(std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control"), host_congestion);
    EXPECT_EQ(r.params["tcp_congestion"], host_congestion);
    expect_valid(r);
  }
}

// The receiver acks only the messages the driver signals: a window of 4 with one in 3 signaled, and
// warm-up and run lengths that are not multiples of 3, must still complete every message.
TEST(TcpProbe, BandwidthWithModeratedAcksCompletesEveryMessage) {
  for (const std::string mode : {"busy", "blocking"}) {
    ProbeSpec spec = tcp_spec("bw", {1000, 3000}, 31, mode);
    spec.driver.tx_depth = 4;
    spec.driver.cq_mod = 3;
    spec.driver.warmup = 7;
    const auto records = run_pair(spec);
    ASSERT_EQ(records.size(), 2u) << mode;
    for (const auto& r : records) EXPECT_EQ(r.samples["messages"], 31) << mode;
  }
}

TEST(TcpProbe, BusyPollBandwidthAndDurationMode) {
  ProbeSpec spec = tcp_spec("bw", {4096}, 0, "busy");
  spec.driver.duration_s = 0.3;
  const auto t0 = now_ns();
  const auto records = run_pair(spec);
  const double took = static_cast<double>(now_ns() - t0) / 1e9;
  ASSERT_EQ(records.size(), 1u);
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 5.0);
  EXPECT_GT(records[0].samples["messages"].get<int>(), 10);
  EXPECT_EQ(records[0].params["duration_s"], 0.3);
}

TEST(TcpProbe, ServerNeverContactedGivesUpAtItsDeadline) {
  ProbeSpec spec = tcp_spec("lat", {2}, 10);
  spec.wait = std::chrono::milliseconds(300);
  auto server = listen_probe(spec, "127.0.0.1", 0);
  const auto t0 = now_ns();
  EXPECT_THROW(server->accept(), DeadlineExceeded);
  const double took = static_cast<double>(now_ns() - t0) / 1e9;
  EXPECT_GE(took, 0.25);
  EXPECT_LT(took, 2.0);
}

TEST(TcpProbe, MismatchedTestsAreRefused) {
  ProbeSpec server_spec = tcp_spec("bw", {2}, 10), client_spec = tcp_spec("lat", {2}, 10);
  auto server = listen_probe(server_spec, "127.0.0.1", 0);
  auto accepted = std::async(std::launch::async, [&] { server->accept(); });
  EXPECT_THROW(connect_probe(client_spec, "127.0.0.1", server->port()), InputError);
  EXPECT_THROW(accepted.get(), InputError);
}

TEST(TcpProbe, APeerThatVanishesIsNamedAndEarlierSizesAreKept) {
  for (const std::string mode : {"busy", "blocking"}) {
    ProbeSpec spec = tcp_spec("lat", {2, 64, 1024}, 100, mode);
    auto server = listen_probe(spec, "127.0.0.1", 0);
    // A server that answers the first size, then dies in the middle of the second.
    auto served = std::async(std::launch::async, [&] {
      auto p = server->accept();
      p->serve(p->next_size());
      p->next_size();
      p.reset();  // closes the connection mid-size
    });
    std::vector<ResultRecord> kept;
    auto probe = connect_probe(spec, "127.0.0.1", server->port());
    try {
      run_active(*probe, spec.driver, [&](const ResultRecord& r) { kept.push_back(r); });
      FAIL() << "a lost peer must be an error";
    } catch (const InfraError& e) {
      EXPECT_NE(std::string(e.what()).find("the peer 127.0.0.1:"), std::string::npos) << e.what();
    }
    served.get();
    ASSERT_EQ(kept.size(), 1u) << mode;
    EXPECT_EQ(kept[0].params["bytes"], 2);
  }
}

TEST(TcpProbe, ASilentPeerEndsTheWaitAtTheDeadline) {
  for (const std::string mode : {"busy", "blocking"}) {
    ProbeSpec spec = tcp_spec("lat", {2}, 100, mode);
    spec.wait = std::chrono::milliseconds(300);
    auto server = listen_probe(spec, "127.0.0.1", 0);
    std::promise<void> release;
    auto served = std::async(std::launch::async, [&] {
      auto p = server->accept();
      p->next_size();
      release.get_future().wait();  // never answers
    });
    auto probe = connect_probe(spec, "127.0.0.1", server->port());
    const auto t0 = now_ns();
    EXPECT_THROW(run_active(*probe, spec.driver, [](const ResultRecord&) {}), DeadlineExceeded) << mode;
    EXPECT_LT(static_cast<double>(now_ns() - t0) / 1e9, 3.0) << mode;
    release.set_value();
    served.get();
  }
}
