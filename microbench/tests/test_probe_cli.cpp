// `rocebench probe` and the microbench steps through the real binary.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "process_util.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "rocebench/transport/verbs/device.hpp"

using namespace rocebench;

namespace {

const std::string kBinary = ROCEBENCH_BINARY;

std::vector<json> results_of(const rbtest::fs::path& file) {
  const RecordFile f = read_records(file, &result_schema());
  EXPECT_TRUE(f.issues.empty()) << (f.issues.empty() ? "" : f.issues.front().message);
  std::vector<json> out;
  for (const auto& r : f.records) {
    if (r["kind"] == "result") out.push_back(r);
  }
  return out;
}

bool wait_for_lines(const rbtest::fs::path& file, std::size_t lines, double seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    const std::string text = rbtest::slurp(file);
    if (static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) >= lines) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A TCP latency client and server at 64 B; the client's records go to the results folder dir/res.
// Returns the run's results.jsonl.
rbtest::fs::path tcp_latency_run(const rbtest::fs::path& dir, int iterations) {
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  auto server = rbtest::start({kBinary, "probe", "tcp", "lat", "--server", "--bind", "127.0.0.1", "--port", port}, {},
                              dir, "server");
  const int rc = rbtest::run({kBinary, "probe", "tcp", "lat", "--client", "127.0.0.1", "--port", port, "--size", "64",
                              "--iters", std::to_string(iterations), "--results", (dir / "res").string()},
                             dir, "client");
  EXPECT_EQ(rc, 0) << rbtest::slurp(dir / "client.err");
  EXPECT_EQ(server.wait(10), 0) << server.stderr_text();
  return rbtest::results_of_only_run(dir / "res");
}

}  // namespace

TEST(ProbeCli, TcpServerAndClientLikePerftest) {
  const auto dir = rbtest::temp_dir("probe-cli");
  const auto results = tcp_latency_run(dir, 300);
  EXPECT_NE(rbtest::slurp(dir / "client.out").find("t_typical"), std::string::npos);
  const auto records = results_of(results);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["params"]["bytes"], 64);
  EXPECT_EQ(records[0]["samples"]["n"], 298);
  rbtest::fs::remove_all(dir);
}

// End to end: the report of a probe run draws the latency CDF from the record's raw samples (a
// solid line), not the dashed one through the percentiles that records without them get.
TEST(ProbeCli, TheReportOfATcpLatencyRunDrawsTheCdfFromRawSamples) {
  const auto dir = rbtest::temp_dir("probe-report");
  const auto results = tcp_latency_run(dir, 300);
  ASSERT_EQ(rbtest::run({kBinary, "report", "-o", (dir / "report").string(), results.string()}, dir, "report"), 0)
      << rbtest::slurp(dir / "report.err");
  const auto plots = dir / "report" / "plots";
  ASSERT_TRUE(rbtest::fs::exists(plots / "plot-input.json")) << rbtest::slurp(dir / "report.out");
  const json input = json::parse(rbtest::slurp(plots / "plot-input.json"));
  ASSERT_EQ(input["latency"].size(), 1u) << input.dump();
  const json& tcp = input["latency"][0];
  ASSERT_TRUE(tcp.contains("samples")) << "the CDF would be drawn from percentiles only: " << tcp.dump();
  EXPECT_EQ(tcp["n"], 300);
  EXPECT_EQ(tcp["samples"].size(), 300u);
  EXPECT_GT(rbtest::fs::file_size(plots / "latency_cdf.png"), 0u);
  rbtest::fs::remove_all(dir);
}

TEST(ProbeCli, BadUsageExits2) {
  const auto dir = rbtest::temp_dir("probe-usage");
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--server", "--client", "127.0.0.1"}, dir, "a"), 2);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "ib", "lat", "--server"}, dir, "b"), 2);
  EXPECT_NE(rbtest::slurp(dir / "b.err").find("unknown transport 'ib'"), std::string::npos);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--server", "--size", "12Q"}, dir, "c"), 2);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--server", "--mode", "lazy"}, dir, "d"), 2);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "verbs", "write_lat", "--server", "--gpu", "0"}, dir, "g"), 2);
  EXPECT_NE(rbtest::slurp(dir / "g.err").find("--gpu is for the verbs bandwidth tests and read_lat"), std::string::npos);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "--help"}, dir, "e"), 0);
  for (const auto& [flag, value, range] : {std::tuple{"--port", "99999", "[0, 65535]"}, std::tuple{"--iters", "0", "[1, 1000000000]"},
                                           std::tuple{"--duration", "-3", "[0.001, 86400]"}, std::tuple{"--tx-depth", "0", "[1, 16384]"}}) {
    EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "bw", "--server", flag, value}, dir, "h", {}, 10), 2) << flag;
    EXPECT_NE(rbtest::slurp(dir / "h.err").find(fmt::format("{}: {} is out of range {}", flag, value, range)), std::string::npos)
        << rbtest::slurp(dir / "h.err");
  }
  rbtest::fs::remove_all(dir);
}

// Without --server / --client, the probe is the microbench.probe step run as a one-step plan: two
// local ranks, the table on the console, the records in the results folder beside the run record.
TEST(ProbeCli, WithoutServerOrClientRunsAOneStepPlanIntoTheResultsFolder) {
  const auto dir = rbtest::temp_dir("probe-plan");
  ASSERT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--size", "64", "--iters", "300", "--results", (dir / "res").string()},
                        dir, "p", {}, 60),
            0)
      << rbtest::slurp(dir / "p.err");
  EXPECT_NE(rbtest::slurp(dir / "p.out").find("t_typical"), std::string::npos) << rbtest::slurp(dir / "p.out");
  const auto file = rbtest::results_of_only_run(dir / "res");
  ASSERT_FALSE(file.empty()) << "no single run in " << (dir / "res");
  const RecordFile f = read_records(file, &result_schema());
  ASSERT_FALSE(f.records.empty());
  EXPECT_EQ(f.records.front()["kind"], "run");
  const auto records = results_of(file);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["step"], "microbench.probe");
  EXPECT_EQ(records[0]["rank"], 1);
  EXPECT_EQ(records[0]["params"]["bytes"], 64);
  EXPECT_TRUE(records[0]["params"].contains("peer"));
  EXPECT_EQ(records[0]["samples"]["n"], 298);
  rbtest::fs::remove_all(dir);
}

// --results once named a file of records; now it is a folder, and the old usage says so.
TEST(ProbeCli, ResultsNamingAFileIsRefusedWithTheNewMeaning) {
  const auto dir = rbtest::temp_dir("probe-oldresults");
  rbtest::write_file(dir / "existing", "{}");
  for (const auto& given : {(dir / "r.jsonl").string(), (dir / "existing").string()}) {
    for (const auto& side : {std::vector<std::string>{}, std::vector<std::string>{"--client", "127.0.0.1"}}) {
      std::vector<std::string> argv{kBinary, "probe", "tcp", "lat", "--results", given};
      argv.insert(argv.end(), side.begin(), side.end());
      EXPECT_EQ(rbtest::run(argv, dir, "old", {}, 10), 2) << given;
      EXPECT_NE(rbtest::slurp(dir / "old.err").find("--results " + given + ": names a file; --results is now the folder"),
                std::string::npos)
          << rbtest::slurp(dir / "old.err");
    }
  }
  EXPECT_FALSE(rbtest::fs::exists(dir / "r.jsonl"));
  // Flags that start ranks are for the plan, not for one side started by hand.
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--client", "127.0.0.1", "--ranks", "4"}, dir, "ranks", {}, 10), 2);
  EXPECT_NE(rbtest::slurp(dir / "ranks.err").find("--ranks starts ranks"), std::string::npos) << rbtest::slurp(dir / "ranks.err");
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--port", "5000"}, dir, "port", {}, 10), 2);
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "lat", "--server", "--deadline", "0"}, dir, "deadline", {}, 10), 2);
  // The range is run's (the plan schema's deadline_s), checked by run's parser.
  EXPECT_NE(rbtest::slurp(dir / "deadline.err").find("rocebench probe: --deadline: 0 is out of range (0, 86400]"), std::string::npos)
      << rbtest::slurp(dir / "deadline.err");
  rbtest::fs::remove_all(dir);
}

TEST(ProbeCli, AServerNeverContactedGivesUp) {
  const auto dir = rbtest::temp_dir("probe-lonely");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(rbtest::run({kBinary, "probe", "tcp", "bw", "--server", "--bind", "127.0.0.1", "--port", "0", "--deadline", "0.5"},
                        dir, "s", {}, 10),
            3);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(rbtest::slurp(dir / "s.err").find("no client connected"), std::string::npos) << rbtest::slurp(dir / "s.err");
  rbtest::fs::remove_all(dir);
}

TEST(ProbeCli, AServerKilledMidSweepIsNamedAndEarlierRowsAreKept) {
  const auto dir = rbtest::temp_dir("probe-kill");
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  auto server = rbtest::start({kBinary, "probe", "tcp", "lat", "--server", "--bind", "127.0.0.1", "--port", port}, {},
                              dir, "server");
  auto client = rbtest::start({kBinary, "probe", "tcp", "lat", "--client", "127.0.0.1", "--port", port, "--all",
                               "--iters", "20000", "--deadline", "5", "--results", (dir / "res").string()},
                              {}, dir, "client");
  ASSERT_TRUE(wait_for_lines(client.out, 2, 30)) << client.stderr_text();  // the header and one size
  ::kill(server.pid, SIGKILL);
  server.wait(5);
  EXPECT_EQ(client.wait(15), 3);
  EXPECT_NE(client.stderr_text().find("the peer 127.0.0.1:" + port), std::string::npos) << client.stderr_text();
  EXPECT_GE(results_of(rbtest::results_of_only_run(dir / "res")).size(), 1u);
  rbtest::fs::remove_all(dir);
}

TEST(ProbeCli, VerbsWithoutADeviceRecordsASkip) {
  if (!verbs::list_devices("/").empty()) GTEST_SKIP() << "this host has an RDMA device";
  const auto dir = rbtest::temp_dir("probe-verbs");
  EXPECT_EQ(rbtest::run({kBinary, "probe", "verbs", "write_lat", "--client", "127.0.0.1", "--results", (dir / "v").string()},
                        dir, "v"),
            0);
  const auto records = results_of(rbtest::results_of_only_run(dir / "v"));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["status"], "skip");
  EXPECT_NE(records[0]["reason"].get<std::string>().find("no RDMA device"), std::string::npos);
  EXPECT_TRUE(records[0]["metrics"].empty());

  // GPU buffers asked for: the record says which GPU (the soft-RoCE guest checks the GPU's own skip).
  EXPECT_EQ(rbtest::run({kBinary, "probe", "verbs", "write_bw", "--client", "127.0.0.1", "--gpu", "0", "--results",
                         (dir / "g").string()},
                        dir, "g"),
            0);
  const auto gpu = results_of(rbtest::results_of_only_run(dir / "g"));
  ASSERT_EQ(gpu.size(), 1u);
  EXPECT_EQ(gpu[0]["status"], "skip");
  EXPECT_EQ(gpu[0]["params"]["gpu"], 0);

  EXPECT_EQ(rbtest::run({kBinary, "probe", "verbs", "write_bw", "--server", "--device", "mlx5_9"}, dir, "u"), 2);
  EXPECT_NE(rbtest::slurp(dir / "u.err").find("unknown RDMA device 'mlx5_9'; this host has: none"), std::string::npos)
      << rbtest::slurp(dir / "u.err");
  rbtest::fs::remove_all(dir);
}

TEST(ProbeCli, AllpairsPrintsTheSchedule) {
  const auto dir = rbtest::temp_dir("probe-allpairs");
  EXPECT_EQ(rbtest::run({kBinary, "probe", "allpairs", "--hosts", "4"}, dir, "a"), 0);
  const std::string out = rbtest::slurp(dir / "a.out");
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3);
  EXPECT_NE(out.find("round   1: 0<-3 1<-2"), std::string::npos) << out;
  rbtest::fs::remove_all(dir);
}

TEST(ProbeStep, RankPairsMeasureTcpLatencyInAPlan) {
  const auto dir = rbtest::temp_dir("probe-step");
  std::ofstream(dir / "plan.json") << R"({"name": "probe", "steps": [
      {"step": "microbench.probe", "params": {"transport": "tcp", "test": "lat", "bytes": [2, 256], "iters": 200}},
      {"step": "microbench.probe", "params": {"transport": "verbs", "test": "write_bw"}}]})";
  const int rc = rbtest::run({kBinary, "run", (dir / "plan.json").string(), "--ranks", "4", "--results-dir",
                              (dir / "out").string(), "--deadline", "20"},
                             dir, "run");
  ASSERT_EQ(rc, 0) << rbtest::slurp(dir / "run.err");
  int tcp = 0, skips = 0;
  for (const auto& r : results_of(dir / "out/results.jsonl")) {
    if (r["step"] != "microbench.probe") continue;
    if (r["params"]["transport"] == "tcp") {
      ++tcp;
      EXPECT_EQ(r["rank"].get<int>() % 2, 1);  // the odd rank of each pair measures
      EXPECT_EQ(r["status"], "ok");
      // Its peer by host and rank, never by address and ephemeral port: two runs line up.
      EXPECT_EQ(r["params"]["peer"], r["host"].get<std::string>() + " rank " + std::to_string(r["rank"].get<int>() - 1));
    } else if (r["status"] == "skip") {
      ++skips;
    }
  }
  EXPECT_EQ(tcp, 4);  // 2 pairs x 2 sizes
  if (verbs::list_devices("/").empty()) {
    EXPECT_EQ(skips, 2);  // each pair's server records it
  }
  rbtest::fs::remove_all(dir);
}
