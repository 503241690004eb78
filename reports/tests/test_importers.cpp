#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>

#include "fixtures.hpp"
#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/aggregate.hpp"
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

ImportOptions lenient() {
  ImportOptions o;
  o.lenient = true;
  return o;
}

// The message of the InputError `parse` throws, or a failure when it throws none.
template <class Parse>
std::string input_error(const Parse& parse) {
  try {
    parse();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError";
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The current nccl-tests header, for rows written inline.
const std::string kNcclHeader =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";

// An allreduce table of `rows` under the current header, as `file`.
std::vector<ResultRecord> allreduce_rows(const std::string& rows, const std::string& file) {
  ImportOptions allreduce;
  allreduce.op = "allreduce";
  return parse_nccl_tests(kNcclHeader + rows, file, allreduce).results;
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

// #19: a truncated log joined a cut row to the next one; the importer read its in-place half as a
// 134-second, 33 PB/s measurement. A row must have exactly the header's columns.
TEST(ImportRows, ARowRunIntoTheNextIsBadInputNamingItsLine) {
  const std::string e = input_error([] { import("nccl-tests", "all_reduce_perf_joined.txt"); });
  EXPECT_TRUE(contains(e, "all_reduce_perf_joined.txt:15: ")) << e;
  EXPECT_TRUE(contains(e, "22 values where the header has 13")) << e;
}

TEST(ImportRows, LenientSkipsTheBadRowListsItAndKeepsTheRest) {
  const auto records = import("nccl-tests", "all_reduce_perf_joined.txt", lenient());
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 6u);  // 4 rows, one skipped, two halves each
  for (const auto& x : r) {
    EXPECT_LT(x["metrics"]["time_us"].get<double>(), 1e5) << x.dump();
    EXPECT_LT(x["metrics"]["busbw_GBps"].get<double>(), 100) << x.dump();
    EXPECT_NE(x["params"]["bytes"], 8388608) << x.dump();
  }
  const json& skipped = records[0]["details"]["skipped_rows"];
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(contains(skipped[0], "all_reduce_perf_joined.txt:15: ")) << skipped;
}

TEST(ImportRows, ANonNumberOrANegativeValueNamesFileLineAndColumn) {
  ImportOptions allreduce;
  allreduce.op = "allreduce";
  auto nccl = [&](const std::string& row) { return input_error([&] { parse_nccl_tests(kNcclHeader + row, "t.txt", allreduce); }); };
  std::string e = nccl("        1024           256     float     sum      -1   -25.61    0.04    0.07      0    25.12    0.04    0.07      0\n");
  EXPECT_TRUE(contains(e, "t.txt:2: column 'time': '-25.61' is negative")) << e;
  e = nccl("        1024           256     float     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.0x7      0\n");
  EXPECT_TRUE(contains(e, "t.txt:2: column 'busbw': '0.0x7' is not a number")) << e;
  e = nccl("        1024           256     float     sum      -1    25.61    nan    0.07      0    25.12    0.04    0.07      0\n");
  EXPECT_TRUE(contains(e, "column 'algbw': 'nan' is not a number")) << e;
  e = nccl("       -1024           256     float     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.07      0\n");
  EXPECT_TRUE(contains(e, "column 'size': '-1024' is negative")) << e;
  e = nccl("        1024           256      1024     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.07      0\n");
  EXPECT_TRUE(contains(e, "column 'type': '1024' is a number")) << e;

  const std::string perftest_lat = read_file(source_dir() / "perftest_write_lat.txt");
  const std::string bad_lat = perftest_lat.substr(0, perftest_lat.find("\n 4096") + 1) + " 4096    1000          2.47           6.02         2.55     -2.57  0.06  2.81  6.02\n";
  e = input_error([&] { parse_perftest(bad_lat, "lat.txt", {}); });
  EXPECT_TRUE(contains(e, "lat.txt:23: column 't_avg': '-2.57' is negative")) << e;
  const std::string cut_lat = perftest_lat.substr(0, perftest_lat.find("\n 4096") + 1) + " 4096    1000          2.47           6.02\n";
  e = input_error([&] { parse_perftest(cut_lat, "lat.txt", {}); });
  EXPECT_TRUE(contains(e, "lat.txt:23: the row has 4 values where the header has 9")) << e;

  e = input_error([] { parse_osu("# OSU MPI Latency Test v7.3\n# Size          Latency (us)\n1024   -2.91\n", "osu.txt", {}); });
  EXPECT_TRUE(contains(e, "osu.txt:3: column 'Latency (us)': '-2.91' is negative")) << e;
  e = input_error([] { parse_osu("# OSU MPI Bandwidth Test v7.3\n# Size      Bandwidth (MB/s)\n1.5   2.91\n", "osu.txt", {}); });
  EXPECT_TRUE(contains(e, "osu.txt:3: column 'Size': '1.5' is not a whole number")) << e;
}

// perftest's QoS and per-port tables put columns where the plain one has others: read by name.
TEST(ImportPerftest, ColumnsAreFoundByTheirNames) {
  const std::string text = "                    RDMA_Write BW Test\n"
                           " #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
                           " 65536    3           5000           96.54              96.51                  0.184082\n";
  const auto r = parse_perftest(text, "qos.txt", {}).results;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].samples["n"], 5000);
  EXPECT_DOUBLE_EQ(r[0].metrics["bw_avg_Gbps"], 96.51);
}

TEST(ImportNcclTests, WrongElementsAndOutOfBoundsFailTheRecords) {
  const auto records = import("nccl-tests", "all_reduce_perf_wrong.txt");
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 8u);
  for (const auto& x : r) {
    EXPECT_EQ(x["status"], "fail") << x.dump();
    EXPECT_TRUE(contains(x["reason"], "all_reduce_perf_wrong.txt:18: # Out of bounds values : 3 FAILED")) << x["reason"];
  }
  EXPECT_EQ(r[5]["params"]["bytes"], 67108864);
  EXPECT_EQ(r[5]["params"]["inplace"], true);
  EXPECT_EQ(r[5]["metrics"]["wrong"], 3);
  EXPECT_TRUE(contains(r[5]["reason"], "3 wrong elements (nccl-tests #wrong)")) << r[5]["reason"];
  EXPECT_FALSE(contains(r[4]["reason"], "wrong elements")) << r[4]["reason"];
}

TEST(ImportNcclTests, AWrongRowAloneFailsItsRecord) {
  const auto r = allreduce_rows(
      "        1024           256     float     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.07      0\n"
      "        4096          1024     float     sum      -1    31.88    0.13    0.19      0    31.40    0.13    0.20      1\n",
      "w.txt");
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[2].status, Status::ok);
  EXPECT_EQ(r[3].status, Status::fail);
  EXPECT_EQ(r[3].reason, "1 wrong elements (nccl-tests #wrong)");
}

TEST(ImportNcclTests, JsonWrongCountsOutOfBoundsAndErrorsFail) {
  const std::string half = R"({"time": 25.6, "alg_bw": 0.04, "bus_bw": 0.07, "nwrong": 0})";
  const std::string bad = R"({"time": 25.6, "alg_bw": 0.04, "bus_bw": 0.07, "nwrong": 2})";
  const std::string doc = R"({"args": ["all_reduce_perf"], "config": {"devices": [{"hostname": "a"}, {"hostname": "a"}]}, "results": [)"
                          R"({"size": 1024, "type": "float", "redop": "sum", "root": "-1", "out_of_place": )" + half + R"(, "in_place": )" + bad + "}],";
  auto r = parse_nccl_tests(doc + R"("out_of_bounds": {"count": 0, "okay": true}, "errors": []})", "j.json", {}).results;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, Status::ok);
  EXPECT_EQ(r[1].status, Status::fail);
  r = parse_nccl_tests(doc + R"("out_of_bounds": {"count": 2, "okay": false}, "errors": ["unhandled cuda error"]})", "j.json", {}).results;
  EXPECT_EQ(r[0].status, Status::fail);
  EXPECT_TRUE(contains(r[0].reason, "2 values out of bounds")) << r[0].reason;
  EXPECT_TRUE(contains(r[0].reason, "unhandled cuda error")) << r[0].reason;
  const std::string negative = R"({"args": ["all_reduce_perf"], "results": [{"size": 1024, "in_place": {"time": -3, "alg_bw": 1, "bus_bw": 1}}]})";
  const std::string e = input_error([&] { parse_nccl_tests(negative, "n.json", {}); });
  EXPECT_TRUE(contains(e, "n.json: column 'results[0].in_place.time': '-3' is negative")) << e;
}

TEST(ImportNcclTests, ATestFailureLineFailsTheRun) {
  const auto r = allreduce_rows(
      "        1024           256     float     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.07      0\n"
      "node02: Test NCCL failure common.cu:1003 'remote process exited or there was a network error / '\n",
      "f.txt");
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, Status::fail);
  EXPECT_TRUE(contains(r[0].reason, "f.txt:3: node02: Test NCCL failure common.cu:1003")) << r[0].reason;
}

TEST(ImportPerftest, ErrorLinesFailTheRecords) {
  const auto records = import("perftest", "perftest_write_bw_error.txt");
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 3u);
  for (const auto& x : r) {
    EXPECT_EQ(x["status"], "fail");
    EXPECT_TRUE(contains(x["reason"], "perftest_write_bw_error.txt:26: Completion with error at client")) << x["reason"];
  }
  for (const auto& x : results(import("perftest", "perftest_write_bw_gbits.txt"))) EXPECT_EQ(x["status"], "ok");
}

TEST(ImportOsu, AnAbortFailsTheBenchmarksRecordsAndAWarningDoesNot) {
  const auto aborted = results(import("osu", "osu_latency_abort.txt"));
  ASSERT_EQ(aborted.size(), 4u);
  for (const auto& x : aborted) {
    EXPECT_EQ(x["status"], "fail");
    EXPECT_TRUE(contains(x["reason"], "osu_latency_abort.txt:7: [node02:2761539] *** An error occurred in MPI_Recv")) << x["reason"];
  }
  // Open MPI's "WARNING: There was an error initializing an OpenFabrics device." is not a failure.
  for (const auto& x : results(import("osu", "osu_multi.txt"))) EXPECT_EQ(x["status"], "ok") << x.dump();
}

TEST(ImportOsu, AnErrorFailsOnlyTheBenchmarkItFollows) {
  const std::string text = "# OSU MPI Bandwidth Test v7.1\n# Size      Bandwidth (MB/s)\n1     2.91\n"
                           "# OSU MPI Bi-Directional Bandwidth Test v7.1\n# Size      Bandwidth (MB/s)\n1     4.88\n"
                           "[/osu/c/util/osu_util_mpi.c:1020] Error: 'Error allocating host memory'\n4096   5100.2\n";
  const auto r = parse_osu(text, "e.txt", {}).results;
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].status, Status::ok);
  EXPECT_EQ(r[1].status, Status::fail);
  EXPECT_EQ(r[2].status, Status::fail);
  EXPECT_TRUE(contains(r[1].reason, "e.txt:7: ")) << r[1].reason;
}

TEST(ImportOsu, ValidationFailIsAFailedRecord) {
  ImportOptions eight;
  eight.world = 8;
  const auto r = parse_osu("# OSU MPI Allreduce Latency Test v7.3\n# Size       Avg Latency(us)        Validation\n"
                           "4                       5.12                  Pass\n8                       5.20                  Fail\n",
                           "v.txt", eight)
                     .results;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].status, Status::ok);
  EXPECT_EQ(r[1].status, Status::fail);
  EXPECT_EQ(r[1].reason, "v.txt:4: OSU validation (-c): Fail");
}

// #19: osu_bibw's rows were averaged into osu_bw's (both are "# Size  Bandwidth (MB/s)").
TEST(ImportOsu, EachBenchmarkOfALogIsASeriesOfItsOwn) {
  const auto records = import("osu", "osu_multi.txt");
  expect_all_valid(records);
  EXPECT_EQ(records[0]["details"]["benchmarks"], json({"osu_bw", "osu_bibw", "osu_get_latency", "osu_acc_latency"}));
  const auto r = results(records);
  ASSERT_EQ(r.size(), 14u);
  std::map<std::string, int> per_benchmark;
  for (const auto& x : r) ++per_benchmark[x["params"]["benchmark"]];
  EXPECT_EQ(per_benchmark, (std::map<std::string, int>{{"osu_bw", 4}, {"osu_bibw", 4}, {"osu_get_latency", 3}, {"osu_acc_latency", 3}}));
  EXPECT_EQ(r[11]["params"]["test"], "lat");
  EXPECT_DOUBLE_EQ(r[13]["metrics"]["lat_us_avg"], 41.72);

  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  const Aggregate a = aggregate(d);
  std::map<std::string, double> bw_at_4mib;
  for (const auto& row : a.probes.rows) {
    if (row.bytes != 4194304) continue;
    for (const auto& [source, metrics] : row.by_source) bw_at_4mib[source] = metrics.at("bw_avg_Gbps");
  }
  EXPECT_EQ(bw_at_4mib, (std::map<std::string, double>{{"mpi osu_bibw (osu)", 24127.35 * 8 / 1000}, {"mpi osu_bw (osu)", 12101.77 * 8 / 1000}}));
}

TEST(ImportOsu, BenchmarkNamesFollowTheirPrograms) {
  const std::vector<std::pair<std::string, std::string>> titles{
      {"# OSU MPI-CUDA Bi-Directional Bandwidth Test v7.1", "osu_bibw"},
      {"# OSU MPI Multiple Bandwidth / Message Rate Test v7.1", "osu_mbw_mr"},
      {"# OSU MPI_Put Bi-directional Bandwidth Test v7.1", "osu_put_bibw"},
      {"# OSU MPI_Get_accumulate latency Test v7.1", "osu_get_acc_latency"},
      {"# OSU MPI Non-blocking Allreduce Latency Test v7.1", "osu_iallreduce"},
      {"# OSU MPI-ROCM Allgatherv Latency Test v7.1", "osu_allgatherv"}};
  for (const auto& [title, program] : titles) {
    const auto imported = parse_osu(title + "\n", "t.txt", {});
    EXPECT_EQ(imported.details["benchmarks"], json({program})) << title;
    EXPECT_EQ(imported.details["titles"], json({title.substr(2)})) << "the benchmark's own header, with its OSU version";
  }
}

// nccl-tests from 2019 to 2022: no root column, "error" columns, "#   Rank 0 Pid P on HOST".
TEST(ImportNcclTests, OldTableWithoutTheRootColumn) {
  const auto records = import("nccl-tests", "all_reduce_perf_2019.txt");
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 8u);
  EXPECT_EQ(r[0]["world"], 4);
  EXPECT_EQ(r[0]["host"], "gpu-a01");
  EXPECT_EQ(r[7]["params"]["redop"], "sum");
  EXPECT_FALSE(r[7]["params"].contains("root"));
  EXPECT_DOUBLE_EQ(r[7]["metrics"]["time_us"], 1488.6);
  EXPECT_DOUBLE_EQ(r[7]["metrics"]["busbw_GBps"], 16.91);
  EXPECT_EQ(r[7]["metrics"]["max_error"], 0);
  EXPECT_FALSE(r[7]["metrics"].contains("wrong"));  // "error" is a difference, not a count of wrong elements
  EXPECT_EQ(r[7]["samples"]["n"], 20);
  EXPECT_EQ(r[7]["status"], "ok");
}

TEST(ImportNcclTests, OldBroadcastTableHasARootButNoRedop) {
  ImportOptions bcast;
  bcast.op = "broadcast";
  const auto r = parse_nccl_tests("#       size         count    type    root     time   algbw   busbw  error     time   algbw   busbw  error\n"
                                  "     1048576        262144   float       0    60.13   17.44   17.44  0e+00    59.82   17.53   17.53  0e+00\n",
                                  "b.txt", bcast)
                     .results;
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].params["root"], 0);
  EXPECT_EQ(r[0].params["redop"], "none");  // as newer versions print it, so both land in one series
  EXPECT_DOUBLE_EQ(r[0].metrics["time_us"], 60.13);
}

// nccl-tests' first version (2017) printed milliseconds under "time".
TEST(ImportNcclTests, FirstVersionTableInMilliseconds) {
  const auto records = import("nccl-tests", "all_reduce_perf_2017.txt", with([](ImportOptions& o) { o.op = "allreduce"; }));
  expect_all_valid(records);
  const auto r = results(records);
  ASSERT_EQ(r.size(), 6u);
  EXPECT_EQ(r[0]["world"], 8);
  EXPECT_EQ(r[0]["host"], "dgx1-07");
  EXPECT_DOUBLE_EQ(r[4]["metrics"]["time_us"], 3728);
  EXPECT_DOUBLE_EQ(r[4]["metrics"]["busbw_GBps"], 15.75);
  EXPECT_EQ(r[4]["samples"]["n"], 20);
}

TEST(ImportNcclTests, HeaderWithoutHashAndNoRankLinesSaysRanksUnknown) {
  const auto records = import("nccl-tests", "all_gather_perf_nohash.txt");
  expect_all_valid(records);
  EXPECT_EQ(records[0]["details"]["ranks"], "unknown");
  const auto r = results(records);
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[0]["step"], "collectives.allgather");
  EXPECT_EQ(r[9]["params"]["ranks"], "unknown");
  EXPECT_EQ(r[9]["params"]["dtype"], "half");
  EXPECT_DOUBLE_EQ(r[9]["metrics"]["busbw_GBps"], 183.09);
  EXPECT_EQ(r[9]["samples"]["n"], 50);
  // --world gives it.
  const auto known = results(import("nccl-tests", "all_gather_perf_nohash.txt", with([](ImportOptions& o) { o.world = 8; })));
  EXPECT_EQ(known[0]["world"], 8);
  EXPECT_FALSE(known[0]["params"].contains("ranks"));
}

TEST(ImportNcclTests, ReportsLabelUnknownRanksAndDrawNoRanksCurve) {
  auto records = import("nccl-tests", "all_gather_perf_nohash.txt");
  const auto known = import("nccl-tests", "all_reduce_perf.txt");
  records.insert(records.end(), known.begin(), known.end());
  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  const Aggregate a = aggregate(d);
  std::vector<std::string> labels;
  for (const auto& c : a.size_curves) labels.push_back(c.label());
  EXPECT_EQ(labels.size(), 4u);
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(), [](const std::string& l) { return contains(l, "ranks unknown"); }), 2) << labels[0];
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(), [](const std::string& l) { return contains(l, "1 ranks"); }), 0);
  EXPECT_EQ(std::count_if(labels.begin(), labels.end(), [](const std::string& l) { return contains(l, "4 ranks"); }), 2);
  for (const auto& c : a.world_curves) EXPECT_NE(c.op, "allgather") << c.label();
}

// Trace replay leaves the out-of-place half blank; a row cut after it has no such gap.
TEST(ImportNcclTests, TraceReplayRowsAreInPlaceOnly) {
  ImportOptions allreduce;
  allreduce.op = "allreduce";
  const std::string replay = "        1024           256     float     sum      -1                                    25.12    0.04    0.07      0\n";
  const auto r = parse_nccl_tests(kNcclHeader + replay, "r.txt", allreduce).results;
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].params["inplace"], true);
  EXPECT_DOUBLE_EQ(r[0].metrics["time_us"], 25.12);
  const std::string cut = "        1024           256     float     sum      -1    25.61    0.04    0.07      0\n";
  EXPECT_THROW(parse_nccl_tests(kNcclHeader + cut, "c.txt", allreduce), RowError);
  const std::string stamped = "        1024           256     float     sum      -1    25.61    0.04    0.07      0    25.12    0.04    0.07      0  2025-10-28 12:00:01\n";
  EXPECT_EQ(parse_nccl_tests(kNcclHeader.substr(0, kNcclHeader.size() - 1) + " timestamp\n" + stamped, "z.txt", allreduce).results.size(), 2u);
}

TEST(ImportAppend, RefusesAFileThatIsNotAResultsFile) {
  const auto dir = temp_dir();
  EXPECT_FALSE(check_results_file_for_append(dir / "absent.jsonl"));
  write_file(dir / "empty.jsonl", "");
  EXPECT_FALSE(check_results_file_for_append(dir / "empty.jsonl"));
  const auto records = import("osu", "osu_bw.txt");
  write_records(dir / "results.jsonl", records);
  EXPECT_FALSE(check_results_file_for_append(dir / "results.jsonl"));

  write_file(dir / "perf.txt", read_file(source_dir() / "all_reduce_perf.txt"));
  std::string e = input_error([&] { check_results_file_for_append(dir / "perf.txt"); });
  EXPECT_TRUE(contains(e, (dir / "perf.txt").string() + ":1: its first line is not a rocebench result record")) << e;
  write_file(dir / "mixed.jsonl", read_file(dir / "results.jsonl") + "size,busbw\n1024,0.07\n");
  e = input_error([&] { check_results_file_for_append(dir / "mixed.jsonl"); });
  EXPECT_TRUE(contains(e, "mixed.jsonl: its last complete line is not a rocebench result record ('1024,0.07')")) << e;
  write_file(dir / "one.txt", "hello");
  EXPECT_THROW(check_results_file_for_append(dir / "one.txt"), InputError);

  // A writer that died mid-record: still a results file, and the caller starts a new line.
  const std::string whole = read_file(dir / "results.jsonl");
  write_file(dir / "cut.jsonl", whole + records[1].dump().substr(0, 30));
  EXPECT_TRUE(check_results_file_for_append(dir / "cut.jsonl"));
}

// -J's fields of another type than nccl-tests writes threw nlohmann's type_error, which is no
// InputError (a crash for `rocebench import`, and for fuzz_importers).
TEST(ImportNcclTests, JsonFieldsOfAnotherTypeAreNotACrash) {
  const std::string doc = R"({"args": ["all_reduce_perf"], "config": {"iterations": "20", "devices": 7}, "average_bus_bandwidth": 3,)"
                          R"( "out_of_bounds": {"count": "2"}, "errors": 5, "results": [{"size": 8, "in_place": {"time": 1, "alg_bw": 0, "bus_bw": 0}}]})";
  Imported imported;
  EXPECT_NO_THROW(imported = parse_nccl_tests(doc, "t.json", {}));
  ASSERT_EQ(imported.results.size(), 1u);
  EXPECT_EQ(imported.details["ranks"], "unknown");
  EXPECT_EQ(imported.results[0].status, Status::ok);
}

// A byte count is a whole number in the records, as our own steps write it: "bytes": 1024, never
// 1024.0, which is another series to anything that reads the params as JSON (history, exports).
TEST(Import, ByteCountsAndRootsAreIntegersInTheRecords) {
  const std::pair<const char*, const char*> files[] = {
      {"perftest", "perftest_write_lat.txt"}, {"perftest", "perftest_write_bw.json"}, {"perftest", "perftest_send_bw_mib.txt"},
      {"nccl-tests", "all_reduce_perf.txt"},  {"nccl-tests", "all_gather_perf.json"}, {"osu", "osu_latency.txt"}};
  for (const auto& [tool, file] : files) {
    for (const auto& r : results(import(tool, file))) {
      EXPECT_TRUE(r["params"]["bytes"].is_number_integer()) << file << ": " << r["params"].dump();
      if (r["params"].contains("root")) {
        EXPECT_TRUE(r["params"]["root"].is_number_integer()) << file << ": " << r["params"].dump();
      }
    }
  }
  for (const auto& r : results(import("osu", "osu_allreduce.txt", with([](ImportOptions& o) { o.world = 8; })))) {
    EXPECT_TRUE(r["params"]["bytes"].is_number_integer()) << r["params"].dump();
  }
}

// /dev/zero ended in std::bad_alloc (exit 3): it, a FIFO, and an output over the stated limit are
// refused before they are read; so is an -o file that is not a results file by its kind.
TEST(ImportBounds, RefusesDevicesFifosAndFilesOverTheLimit) {
  const auto dir = temp_dir();
  EXPECT_EQ(input_error([] { import_file("perftest", "/dev/zero", {}); }), "/dev/zero: is a character device, not a file");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(input_error([&] { import_file("nccl-tests", dir / "fifo", {}); }), (dir / "fifo").string() + ": is a FIFO (named pipe), not a file");
  write_file(dir / "big.txt", "");
  std::filesystem::resize_file(dir / "big.txt", 65 * kMiB);
  EXPECT_EQ(input_error([&] { import_file("osu", dir / "big.txt", {}); }),
            (dir / "big.txt").string() + ": is 65 MiB; a tool output to import is at most 64 MiB");
  write_file(dir / "long.txt", "# OSU MPI Bandwidth Test\n" + std::string(4 * kMiB + 1, ' ') + "\n");
  EXPECT_EQ(input_error([&] { import_file("osu", dir / "long.txt", {}); }),
            (dir / "long.txt").string() + ":2: a line of a tool output to import is at most 4 MiB; this one is longer");
  EXPECT_EQ(input_error([] { check_results_file_for_append("/dev/zero"); }), "/dev/zero: is a character device, not a file");
}
