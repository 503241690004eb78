// `rocebench allreduce` as a user runs it: real processes, real TCP, records on disk.
#include <gtest/gtest.h>
#include <signal.h>

#include "../../harness/tests/process_util.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/transport/tcp/mesh.hpp"
#include "rocebench/transport/tcp/socket.hpp"

using namespace rocebench;

namespace {

const std::string kBinary = ROCEBENCH_BINARY;

std::vector<json> results_of(const rbtest::fs::path& file, const std::string& step) {
  const RecordFile f = read_records(file, &result_schema());
  for (const auto& issue : f.issues) ADD_FAILURE() << file << ":" << issue.line << ": " << issue.message;
  std::vector<json> out;
  for (const auto& r : f.records) {
    if (r.value("step", "") == step) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST(AllreduceCommand, FourRanksEveryAlgorithm) {
  const auto dir = rbtest::temp_dir("allreduce");
  for (const std::string algorithm : {"ring", "ps", "rd"}) {
    const auto out = dir / algorithm;
    const int rc = rbtest::run({kBinary, "allreduce", "--ranks", "4", "--algorithm", algorithm, "-b", "1K", "-e", "256K",
                                "-f", "16", "-w", "1", "-n", "3", "--results-dir", out.string()},
                               dir, algorithm);
    ASSERT_EQ(rc, 0) << rbtest::slurp(dir / (algorithm + ".err"));
    const auto records = results_of(out / "results.jsonl", "collectives.allreduce");
    ASSERT_EQ(records.size(), 6u) << algorithm;  // 1K, 16K, 256K x in/out of place
    for (const auto& r : records) {
      EXPECT_EQ(r["status"], "ok");
      EXPECT_EQ(r["params"]["algorithm"], algorithm);
      EXPECT_EQ(r["world"], 4);
      EXPECT_EQ(r["metrics"]["wrong"], 0);
      EXPECT_GT(r["metrics"]["busbw_GBps"].get<double>(), 0);
    }
    EXPECT_NE(rbtest::slurp(dir / (algorithm + ".out")).find("busbw"), std::string::npos);
  }
}

TEST(AllreduceCommand, ReduceScatterAndAllgatherStepsCheckAndRecordTheirBusFactor) {
  const auto dir = rbtest::temp_dir("halves");
  for (const std::string collective : {"reduce_scatter", "allgather"}) {
    const auto out = dir / collective;
    const int rc = rbtest::run({kBinary, "allreduce", "--collective", collective, "--ranks", "3", "-b", "1K", "-e", "64K",
                                "-f", "64", "-w", "0", "-n", "2", "--results-dir", out.string()},
                               dir, collective);
    ASSERT_EQ(rc, 0) << rbtest::slurp(dir / (collective + ".err"));
    const auto records = results_of(out / "results.jsonl", "collectives." + collective);
    ASSERT_EQ(records.size(), 4u) << collective;  // 1K, 64K x in/out of place
    for (const auto& r : records) {
      EXPECT_EQ(r["status"], "ok");
      EXPECT_EQ(r["metrics"]["wrong"], 0);
      const double algbw = r["metrics"]["algbw_GBps"], busbw = r["metrics"]["busbw_GBps"];
      EXPECT_NEAR(busbw, algbw * 2.0 / 3.0, 1e-9 * busbw) << collective << ": (n-1)/n";
    }
  }
}

TEST(AllreduceCommand, WorldSizeSweepRecordsEachSize) {
  const auto dir = rbtest::temp_dir("worlds");
  const int rc = rbtest::run({kBinary, "allreduce", "--ranks", "4", "--world-sizes", "1,2,4", "-b", "64K", "-e", "64K",
                              "-n", "2", "-w", "0", "--placement", "in", "--results-dir", (dir / "out").string()},
                             dir, "run");
  ASSERT_EQ(rc, 0) << rbtest::slurp(dir / "run.err");
  std::vector<int> worlds;
  for (const auto& r : results_of(dir / "out" / "results.jsonl", "collectives.allreduce")) worlds.push_back(r["world"]);
  EXPECT_EQ(worlds, (std::vector<int>{1, 2, 4}));
}

TEST(AllreduceCommand, TcpSndbufZeroLeavesEverySendBufferToTheKernel) {
  const auto dir = rbtest::temp_dir("sndbuf");
  for (const std::string given : {"", "0"}) {
    std::vector<std::string> argv = {kBinary, "allreduce", "--ranks", "2", "-b", "64K", "-e", "64K", "-n", "2",
                                     "--placement", "in", "--results-dir", (dir / ("out" + given)).string()};
    if (!given.empty()) argv.insert(argv.end(), {"--tcp-sndbuf", given});
    ASSERT_EQ(rbtest::run(argv, dir, "run" + given), 0) << rbtest::slurp(dir / ("run" + given + ".err"));
    const auto records = results_of(dir / ("out" + given) / "results.jsonl", "collectives.allreduce");
    ASSERT_EQ(records.size(), 1u);
    // Both ranks on this host: by default their sockets get the small same-host buffer, doubled by the kernel.
    EXPECT_EQ(records[0]["params"]["tcp_sndbuf"], given.empty() ? std::to_string(2 * tcp::kSameHostSendBuffer) : "auto")
        << given;
  }
}

TEST(AllreduceCommand, BadOptionsExitTwo) {
  const auto dir = rbtest::temp_dir("badopts");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "-b", "lots"}, dir, "a"), 2);
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--algorithm", "tree", "--ranks", "2", "--results-dir",
                         (dir / "b").string()}, dir, "b"), 2);
  // A value the step refuses is reported against the flag typed, not a temporary plan's field.
  EXPECT_NE(rbtest::slurp(dir / "b.err").find("rocebench allreduce: --algorithm \"tree\": must be one of"), std::string::npos)
      << rbtest::slurp(dir / "b.err");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--world-sizes", "1,8", "--ranks", "2", "-e", "1K", "--results-dir",
                         (dir / "c").string()}, dir, "c"), 2);
  EXPECT_NE(rbtest::slurp(dir / "c.err").find("field 'world_sizes': 8 ranks asked for, but the run has 2"), std::string::npos)
      << rbtest::slurp(dir / "c.err");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--spin-us", "-4", "--ranks", "2", "--results-dir", (dir / "d").string()},
                        dir, "d"), 2);
  EXPECT_NE(rbtest::slurp(dir / "d.err").find("rocebench allreduce: --spin-us: -4 is out of range [0, 10000]"), std::string::npos)
      << rbtest::slurp(dir / "d.err");
  for (const char* err : {"b.err", "d.err"}) EXPECT_EQ(rbtest::slurp(dir / err).find("rocebench-plan"), std::string::npos);
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--chunk", "1", "--ranks", "2"}, dir, "h"), 2);
  EXPECT_NE(rbtest::slurp(dir / "h.err").find("rocebench allreduce: --chunk: 1 is out of range >= 64"), std::string::npos)
      << rbtest::slurp(dir / "h.err");
  // A launcher flag too: in the command's name, without run's usage.
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--ranks", "0"}, dir, "i"), 2);
  EXPECT_NE(rbtest::slurp(dir / "i.err").find("rocebench allreduce: --ranks: 0 is out of range [1, 4096]"), std::string::npos)
      << rbtest::slurp(dir / "i.err");
  EXPECT_EQ(rbtest::slurp(dir / "i.err").find("rocebench run"), std::string::npos) << rbtest::slurp(dir / "i.err");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--tcp-congestion", "no-such-cc", "--ranks", "2", "-e", "1K",
                         "--results-dir", (dir / "e").string()}, dir, "e"), 2);
  EXPECT_NE(rbtest::slurp(dir / "e.err").find("tcp_congestion 'no-such-cc' cannot be set"), std::string::npos)
      << rbtest::slurp(dir / "e.err");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--ranks", "2", "-b", "2K", "-e", "1K"}, dir, "g"), 2);
  EXPECT_NE(rbtest::slurp(dir / "g.err").find("-e 1K is smaller than -b 2K"), std::string::npos) << rbtest::slurp(dir / "g.err");
  EXPECT_EQ(rbtest::run({kBinary, "allreduce", "--tcp-sndbuf", "-64K", "--ranks", "2"}, dir, "f"), 2);
  EXPECT_NE(rbtest::slurp(dir / "f.err").find("--tcp-sndbuf: '-64K' is not a size"), std::string::npos)
      << rbtest::slurp(dir / "f.err");
}

TEST(AllreduceCommand, RankKilledMidSweepIsNamedAndRecordsStay) {
  const auto dir = rbtest::temp_dir("killsweep");
  const auto results = dir / "out";
  // A short sweep that records, then one that runs until the kill.
  std::ofstream(dir / "plan.json") << R"({"name": "sweep", "steps": [
      {"step": "collectives.allreduce", "params": {"min_bytes": 1024, "max_bytes": 4096, "factor": 4, "iters": 2,
                                                   "warmup": 0, "placement": "in"}},
      {"step": "collectives.allreduce", "params": {"min_bytes": 1024, "max_bytes": 1024, "factor": 1,
                                                   "iters": 200000000, "warmup": 0, "placement": "in"}}]})";
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  std::vector<rbtest::Process> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(rbtest::start({kBinary, "run", "--launcher", "env", "--plan", (dir / "plan.json").string(),
                                   "--results-dir", results.string(), "--deadline", "10"},
                                  {{"RANK", std::to_string(r)}, {"WORLD_SIZE", "3"}, {"MASTER_ADDR", "127.0.0.1"},
                                   {"MASTER_PORT", port}, {"ROCEBENCH_TOKEN", "tok"}},
                                  dir, "rank" + std::to_string(r)));
  }
  // Rank 0 prints each sweep's header as it starts it: the second one means the first has recorded.
  auto headers = [&] {
    const std::string out = rbtest::slurp(dir / "rank0.out");
    std::size_t n = 0;
    for (std::size_t at = out.find("# allreduce"); at != std::string::npos; at = out.find("# allreduce", at + 1)) ++n;
    return n;
  };
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (headers() < 2 && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(headers(), 2u) << rbtest::slurp(dir / "rank0.out") << ranks[0].stderr_text();
  ::kill(ranks[1].pid, SIGKILL);
  for (int r : {0, 2}) {
    EXPECT_EQ(ranks[r].wait(20), 3) << ranks[r].stderr_text();
    EXPECT_NE(ranks[r].stderr_text().find("rank 1 on host"), std::string::npos) << ranks[r].stderr_text();
  }
  ranks[1].wait(5);
  const RecordFile f = read_records(results / "results.jsonl", &result_schema());
  EXPECT_TRUE(f.issues.empty());
  ASSERT_FALSE(f.records.empty());
  EXPECT_EQ(f.records.front()["kind"], "run");
  std::vector<std::size_t> first_sweep;
  for (const auto& r : results_of(results / "results.jsonl", "collectives.allreduce")) {
    if (r["status"] == "ok") first_sweep.push_back(r["params"]["bytes"]);
  }
  EXPECT_EQ(first_sweep, (std::vector<std::size_t>{1020, 4092})) << "the first sweep's records, written before the kill";
}
