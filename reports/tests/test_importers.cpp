#include <gtest/gtest.h>

#include <cmath>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/text.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

std::vector<json> import(const std::string& tool, const std::string& file, ImportOptions o = {}) {
  return import_file(tool, source_dir() / file, o);
}

ImportOptions with(void (*set)(ImportOptions&)) {
  ImportOptions o;
  set(o);
  return o;
}

// The result records only (the first record is the import event).
std::vector<json> results(const std::vector<json>& records) { return {records.begin() + 1, records.end()}; }

void expect_all_valid(const std::vector<json>& records) {
  for (const auto& r : records) EXPECT_TRUE(result_schema().validate(r).empty()) << r.dump();
}

}  // namespace

TEST(ImportPerftest, LatencyTableGivesEveryPercentile) {
  const auto records = import("perftest", "perftest_write_lat.txt", with([](ImportOptions& o) { o.peer = "node02"; }));
  expect_all_valid(records);
  EXPECT_EQ(records[0]["kind"], "event");
  EXPECT_EQ(records[0]["details"]["device"], "mlx5_0");
  const auto r = results(records);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["step"], "microbench.probe");
  EXPECT_EQ(r[0]["params"]["test"], "write_lat");
  EXPECT_EQ(r[0]["params"]["transport"], "verbs");
  EXPECT_EQ(r[0]["params"]["tool"], "perftest");
  EXPECT_EQ(r[0]["params"]["peer"], "node02");
  EXPECT_EQ(r[0]["params"]["bytes"], 2);
  EXPECT_DOUBLE_EQ(r[0]["metrics"]["lat_us_p50"], 1.13);
  EXPECT_DOUBLE_EQ(r[0]["metrics"]["lat_us_p99_9"], 4.37);
  EXPECT_DOUBLE_EQ(r[1]["metrics"]["lat_us_p99"], 2.81);
  EXPECT_EQ(r[1]["samples"]["n"], 1000);
}

TEST(ImportPerftest, GbitTableSkipsWarningsInsideTheTable) {
  const auto r = results(import("perftest", "perftest_write_bw_gbits.txt"));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0]["params"]["test"], "write_bw");
  EXPECT_DOUBLE_EQ(r[0]["metrics"]["bw_avg_Gbps"], 96.51);
  EXPECT_DOUBLE_EQ(r[1]["metrics"]["bw_peak_Gbps"], 97.12);
  EXPECT_DOUBLE_EQ(r[1]["metrics"]["msg_rate_Mpps"], 0.011576);
}

TEST(ImportPerftest, MibTableIsConvertedToGbit) {
  const auto r = results(import("perftest", "perftest_send_bw_mib.txt"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["params"]["test"], "send_bw");
  // 11030.45 MiB/s * 2^20 * 8 / 10^9 = 92.5301 Gb/s
  EXPECT_NEAR(r[0]["metrics"]["bw_avg_Gbps"].get<double>(), 92.5301, 1e-4);
}

TEST(ImportPerftest, OutJsonWithUnquotedKeys) {
  const auto records = import("perftest", "perftest_read_lat.json");
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0]["params"]["test"], "read_lat");
  EXPECT_DOUBLE_EQ(r[0]["metrics"]["lat_us_p50"], 2.28);
  EXPECT_DOUBLE_EQ(r[0]["metrics"]["lat_us_p99_9"], 5.87);
}

TEST(ImportPerftest, OutJsonBandwidthUnitsAreChosen) {
  const auto mib = results(import("perftest", "perftest_write_bw.json"));
  EXPECT_NEAR(mib[0]["metrics"]["bw_avg_Gbps"].get<double>(), 11507.62 * 1048576 * 8 / 1e9, 1e-9);
  const auto gb = results(import("perftest", "perftest_write_bw.json", with([](ImportOptions& o) { o.bw_units = "Gb/s"; })));
  EXPECT_DOUBLE_EQ(gb[0]["metrics"]["bw_avg_Gbps"], 11507.62);
}

TEST(ImportNcclTests, TextTableGivesOutOfPlaceAndInPlace) {
  const auto records = import("nccl-tests", "all_reduce_perf.txt");
  expect_all_valid(records);
  EXPECT_DOUBLE_EQ(records[0]["details"]["avg_busbw_GBps"], 4.41263);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 18u);
  EXPECT_EQ(r[0]["step"], "collectives.allreduce");
  EXPECT_EQ(r[0]["world"], 4);
  EXPECT_EQ(r[0]["host"], "node01");
  const json& last_oop = r[16];
  EXPECT_EQ(last_oop["params"]["bytes"], 134217728);
  EXPECT_EQ(last_oop["params"]["inplace"], false);
  EXPECT_EQ(last_oop["params"]["dtype"], "float");
  EXPECT_DOUBLE_EQ(last_oop["metrics"]["time_us"], 13875);
  EXPECT_DOUBLE_EQ(last_oop["metrics"]["busbw_GBps"], 14.51);
  EXPECT_EQ(r[17]["params"]["inplace"], true);
  EXPECT_DOUBLE_EQ(r[17]["metrics"]["busbw_GBps"], 14.53);
  EXPECT_EQ(r[17]["metrics"]["wrong"], 0);
  EXPECT_EQ(r[17]["samples"]["n"], 20);
}

TEST(ImportNcclTests, JsonOutput) {
  const auto records = import("nccl-tests", "all_gather_perf.json");
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0]["step"], "collectives.allgather");
  EXPECT_EQ(r[0]["world"], 2);
  EXPECT_EQ(r[0]["host"], "gpu-a");
  EXPECT_DOUBLE_EQ(r[4]["metrics"]["busbw_GBps"], 5.275685);
  EXPECT_FALSE(r[5]["metrics"].contains("wrong"));  // "nwrong": null (not checked)
}

TEST(ImportNcclTests, CutRowIsReportedWithItsLine) {
  try {
    import("nccl-tests", "all_reduce_perf_cut.txt");
    FAIL() << "a cut row must be an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce_perf_cut.txt:5"), std::string::npos) << e.what();
  }
}

TEST(ImportOsu, LatencyAndBandwidth) {
  const auto lat = results(import("osu", "osu_latency.txt", with([](ImportOptions& o) { o.transport = "tcp"; })));
  ASSERT_EQ(lat.size(), 7u);
  EXPECT_EQ(lat[5]["params"]["test"], "lat");
  EXPECT_EQ(lat[5]["params"]["transport"], "tcp");
  EXPECT_DOUBLE_EQ(lat[5]["metrics"]["lat_us_avg"], 2.91);
  const auto bw = results(import("osu", "osu_bw.txt"));
  ASSERT_EQ(bw.size(), 4u);
  EXPECT_DOUBLE_EQ(bw[3]["metrics"]["bw_avg_Gbps"], 12107.83 * 8 / 1000);
}

TEST(ImportOsu, CollectiveNeedsTheWorldAndGetsBusBandwidth) {
  EXPECT_THROW(import("osu", "osu_allreduce.txt"), InputError);
  const auto records = import("osu", "osu_allreduce.txt", with([](ImportOptions& o) { o.world = 8; }));
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[2]["step"], "collectives.allreduce");
  EXPECT_EQ(r[2]["params"]["dtype"], "MPI_CHAR");
  const double algbw = 1048576 / 612.35 / 1e3;
  EXPECT_DOUBLE_EQ(r[2]["metrics"]["algbw_GBps"], algbw);
  EXPECT_DOUBLE_EQ(r[2]["metrics"]["busbw_GBps"], algbw * 2 * 7 / 8);
  EXPECT_EQ(r[2]["samples"]["n"], 100);
}

TEST(Import, EmptyOrUnknownInputIsBadInput) {
  const auto dir = temp_dir();
  write_file(dir / "empty.txt", "\n");
  EXPECT_THROW(import_file("perftest", dir / "empty.txt", {}), InputError);
  write_file(dir / "noise.txt", "hello\nworld\n");
  EXPECT_THROW(import_file("osu", dir / "noise.txt", {}), InputError);
  EXPECT_THROW(import_file("iperf", source_dir() / "osu_bw.txt", {}), InputError);
  EXPECT_THROW(import_file("osu", dir / "absent.txt", {}), InputError);
}

// Inputs fuzz_importers found: each crashed (an out-of-range index, an uncaught std::stoi) before.
TEST(ImportNcclTests, MalformedOutputsAreBadInputNotCrashes) {
  ImportOptions allreduce;
  allreduce.op = "allreduce";
  EXPECT_TRUE(parse_nccl_tests("", "empty.txt", {}).results.empty());
  EXPECT_TRUE(parse_nccl_tests(" \n\t\n", "blank.txt", {}).results.empty());
  EXPECT_THROW(parse_nccl_tests("#  Rank  x Group  0 Pid 1 on host device  0 [0x00] GPU\n", "rank.txt", {}), InputError);
  const std::string header = "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  EXPECT_THROW(parse_nccl_tests(header + "     1024           256     float     sum\n", "short.txt", allreduce),
               InputError);
  EXPECT_NO_THROW(parse_nccl_tests(header + "# Out of bounds values :\n", "oob.txt", allreduce));
}

// fuzz_importers: perftest's n_iterations of 1e29 was cast to long long (undefined behaviour).
TEST(ImportCounts, AnIterationCountMustBeAWholeNumberInRange) {
  EXPECT_EQ(as_count(20), 20);
  EXPECT_THROW(as_count(1.00033e29), InputError);
  EXPECT_THROW(as_count(-1), InputError);
  EXPECT_THROW(as_count(2.5), InputError);
  EXPECT_THROW(as_count(std::nan("")), InputError);
}

// fuzz_importers in CI: a number beyond double's range in nccl-tests' JSON was an uncaught out_of_range.
TEST(ImportNcclTests, AJsonNumberBeyondDoublesRangeIsBadInput) {
  EXPECT_THROW(parse_nccl_tests(R"({"results": [{"size": 63e556}]})", "big.json", {}), InputError);
}
