// Host/GPU micro-benchmarks: Google Benchmark's JSON as records, a real (short) run, and the CLI.
#include <gtest/gtest.h>

#include <set>

#include "process_util.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/microbench/hostbench.hpp"

using namespace rocebench;
using namespace rocebench::microbench;

namespace {

// What Google Benchmark 1.7 writes for two repetitions of memcpy and of a sum, their aggregates
// (which the conversion recomputes from the repetitions) and a benchmark that failed.
const char* kGbenchJson = R"({
  "context": {"date": "2026-11-29T15:00:00+00:00", "num_cpus": 2},
  "benchmarks": [
    {"name": "memcpy/bytes:4096/real_time", "run_name": "memcpy/bytes:4096/real_time", "run_type": "iteration",
     "repetitions": 2, "repetition_index": 0, "threads": 1, "iterations": 1000, "real_time": 200.0,
     "cpu_time": 199.0, "time_unit": "ns", "bytes_moved": 8192},
    {"name": "memcpy/bytes:4096/real_time", "run_name": "memcpy/bytes:4096/real_time", "run_type": "iteration",
     "repetitions": 2, "repetition_index": 1, "threads": 1, "iterations": 1000, "real_time": 0.4,
     "cpu_time": 0.4, "time_unit": "us", "bytes_moved": 8192},
    {"name": "sum/dtype:float16/bytes:4096/real_time", "run_name": "sum/dtype:float16/bytes:4096/real_time",
     "run_type": "iteration", "repetitions": 2, "repetition_index": 0, "threads": 1, "iterations": 500,
     "real_time": 600.0, "cpu_time": 600.0, "time_unit": "ns", "bytes_moved": 12288},
    {"name": "sum/dtype:float16/bytes:4096/real_time", "run_name": "sum/dtype:float16/bytes:4096/real_time",
     "run_type": "iteration", "repetitions": 2, "repetition_index": 1, "threads": 1, "iterations": 500,
     "real_time": 600.0, "cpu_time": 600.0, "time_unit": "ns", "bytes_moved": 12288},
    {"name": "sum/dtype:float16/bytes:4096/real_time_mean", "run_name": "sum/dtype:float16/bytes:4096/real_time",
     "run_type": "aggregate", "aggregate_name": "mean", "repetitions": 2, "threads": 1, "iterations": 2,
     "real_time": 600.0, "cpu_time": 600.0, "time_unit": "ns", "bytes_moved": 12288},
    {"name": "gpu_gemm/type:bf16/n:4096/gpu:1/min_time:0.100/repeats:1/manual_time",
     "run_name": "gpu_gemm/type:bf16/n:4096/gpu:1/min_time:0.100/repeats:1/manual_time",
     "run_type": "iteration", "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 10,
     "real_time": 0.25, "cpu_time": 0.26, "time_unit": "ms", "flop": 137438953472},
    {"name": "gpu_launch/wait:sync/real_time", "run_name": "gpu_launch/wait:sync/real_time", "run_type": "iteration",
     "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 0, "real_time": 0, "cpu_time": 0,
     "time_unit": "ns", "error_occurred": true, "error_message": "cudaLaunchKernel: invalid device function"}
  ]})";

// dst[i] += src[i] in float32, as collectives' kernel does.
void add_f32(void* dst, const void* src, std::size_t n) {
  auto* d = static_cast<float*>(dst);
  const auto* s = static_cast<const float*>(src);
  for (std::size_t i = 0; i < n; ++i) d[i] += s[i];
}

const json& by_name(const std::vector<ResultRecord>& records, const std::string& benchmark) {
  for (const auto& r : records) {
    if (r.params.value("benchmark", "") == benchmark) return r.metrics;
  }
  throw std::runtime_error("no record of " + benchmark);
}

}  // namespace

TEST(HostBench, SizesArePowersOfFourFromL1ToDram) {
  EXPECT_EQ(hostbench_sizes(4096, 65536), (std::vector<std::size_t>{4096, 16384, 65536}));
  EXPECT_EQ(hostbench_sizes(4096, 100000).back(), 65536u);
  EXPECT_EQ(hostbench_sizes(std::size_t{4} << 10, std::size_t{256} << 20).size(), 9u);
  EXPECT_TRUE(hostbench_sizes(8192, 4096).empty());
}

TEST(HostBench, GbenchJsonBecomesOneValidRecordPerBenchmark) {
  const auto records = records_from_gbench(json::parse(kGbenchJson), "microbench.host");
  ASSERT_EQ(records.size(), 4u);

  const ResultRecord& copy = records[0];
  EXPECT_EQ(copy.params, json({{"benchmark", "memcpy"}, {"bytes", 4096}}));
  // 8192 B in 200 ns and in 400 ns (0.4 us): 40.96 and 20.48 GB/s.
  EXPECT_DOUBLE_EQ(copy.metrics["bw_GBps_median"].get<double>(), (40.96 + 20.48) / 2);
  EXPECT_DOUBLE_EQ(copy.metrics["bw_GBps_mean"].get<double>(), (40.96 + 20.48) / 2);
  EXPECT_NEAR(copy.metrics["bw_GBps_stddev"].get<double>(), 14.482, 1e-3);  // sample stddev, as Google Benchmark's
  EXPECT_DOUBLE_EQ(copy.metrics["time_us_median"].get<double>(), 0.3);
  EXPECT_EQ(copy.samples["n"], 2);
  EXPECT_EQ(copy.samples["metric"], "bw_GBps");
  EXPECT_EQ(copy.samples["values"].size(), 2u);
  EXPECT_EQ(copy.samples["iterations"], json::array({1000, 1000}));
  EXPECT_FALSE(copy.metrics.contains("vs_memcpy"));

  const ResultRecord& sum = records[1];
  EXPECT_EQ(sum.params, json({{"benchmark", "sum"}, {"dtype", "float16"}, {"bytes", 4096}}));
  EXPECT_DOUBLE_EQ(sum.metrics["bw_GBps_median"].get<double>(), 20.48);  // the aggregate row is not a repetition
  EXPECT_EQ(sum.samples["n"], 2);
  EXPECT_DOUBLE_EQ(sum.metrics["vs_memcpy"].get<double>(), 20.48 / 30.72);

  const ResultRecord& gemm = records[2];
  EXPECT_EQ(gemm.params, json({{"benchmark", "gpu_gemm"}, {"type", "bf16"}, {"n", 4096}, {"gpu", 1}}));  // the device it ran on
  EXPECT_NEAR(gemm.metrics["TFLOP_per_s_median"].get<double>(), 549.756, 1e-3);  // 2*4096^3 flop in 0.25 ms
  EXPECT_EQ(gemm.samples["metric"], "TFLOP_per_s");

  const ResultRecord& failed = records[3];
  EXPECT_EQ(failed.status, Status::error);
  EXPECT_EQ(failed.reason, "cudaLaunchKernel: invalid device function");
  EXPECT_EQ(failed.samples["n"], 0);

  for (ResultRecord r : records) {
    r.host = "h";
    EXPECT_TRUE(result_schema().validate(to_json(r, "run-1")).empty()) << to_json(r, "run-1").dump();
  }
  EXPECT_NE(hostbench_table(records).find("vs memcpy"), std::string::npos);
}

TEST(HostBench, ARealRunMeasuresMemcpyAndTheKernelAtEverySize) {
  HostBenchOptions o{.min_bytes = 4096, .max_bytes = 16384, .repetitions = 3, .min_time_s = 0.01, .filter = "memcpy|sum"};
  const auto records = records_from_gbench(run_hostbench(o, {{"float32", 4, add_f32}}), "microbench.host");
  ASSERT_EQ(records.size(), 4u);  // 2 sizes x (memcpy, sum)
  for (const auto& r : records) {
    EXPECT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_EQ(r.samples["n"], 3);
    EXPECT_GT(r.metrics["bw_GBps_median"].get<double>(), 0);
    EXPECT_LE(r.samples["min"].get<double>(), r.metrics["bw_GBps_median"].get<double>());
    EXPECT_GE(r.samples["max"].get<double>(), r.metrics["bw_GBps_median"].get<double>());
    for (const auto& iterations : r.samples["iterations"]) EXPECT_GT(iterations.get<double>(), 0);
  }
  EXPECT_TRUE(by_name(records, "sum").contains("vs_memcpy"));
}

TEST(HostBench, BadOptionsAreUsageErrors) {
  EXPECT_THROW(run_hostbench({.filter = "nothing-matches-this"}, {}), UsageError);
  EXPECT_THROW(run_hostbench({.filter = "(unclosed"}, {}), UsageError);
  EXPECT_THROW(run_hostbench({.repetitions = 0}, {}), UsageError);
  EXPECT_THROW(run_hostbench({.min_bytes = 8192, .max_bytes = 4096}, {}), UsageError);
}

TEST(HostBench, CliRecordsTheCollectivesKernelsAndSkipsGpuWithAReason) {
  RBTEST_NEEDS_ROCEBENCH();
  const auto dir = rbtest::temp_dir("probe-host");
  const int rc = rbtest::run({ROCEBENCH_BINARY, "probe", "host", "--max-bytes", "16K", "--repetitions", "2",
                              "--min-time", "0.01", "--results", (dir / "res").string()},
                             dir, "host");
  EXPECT_EQ(rc, 0) << rbtest::slurp(dir / "host.err");
  // A one-step plan: the records are in the run's folder, after its run record.
  const auto file = rbtest::results_of_only_run(dir / "res");
  ASSERT_FALSE(file.empty()) << "no single run in " << (dir / "res");
  const RecordFile f = read_records(file, &result_schema());
  ASSERT_FALSE(f.records.empty());
  EXPECT_EQ(f.records.front()["kind"], "run");
  EXPECT_TRUE(f.issues.empty()) << (f.issues.empty() ? "" : f.issues.front().message);
  std::set<std::string> dtypes;
  int gpu = 0;
  for (const auto& r : f.records) {
    if (r["kind"] != "result") continue;
    const std::string benchmark = r["params"]["benchmark"];
    if (benchmark == "sum") {
      dtypes.insert(r["params"]["dtype"].get<std::string>());
      EXPECT_TRUE(r["metrics"].contains("vs_memcpy"));
    }
    if (benchmark.starts_with("gpu_")) {
      ++gpu;
      // Either measured on a GPU, or skipped saying why: never a number without a device.
      if (r["status"] == "skip") EXPECT_NE(r["reason"].get<std::string>().find("GPU"), std::string::npos);
      else EXPECT_EQ(r["status"], "ok") << r.dump();
    }
  }
  EXPECT_EQ(dtypes, (std::set<std::string>{"float32", "float16", "bfloat16"}));
  EXPECT_GE(gpu, 3);
  EXPECT_NE(rbtest::slurp(dir / "host.out").find("vs memcpy"), std::string::npos);

  // Refused before any rank starts: no run folder.
  EXPECT_EQ(rbtest::run({ROCEBENCH_BINARY, "probe", "host", "--filter", "(bad", "--results", (dir / "bad").string()}, dir, "bad"), 2);
  EXPECT_NE(rbtest::slurp(dir / "bad.err").find("--filter"), std::string::npos);
  EXPECT_FALSE(rbtest::fs::exists(dir / "bad"));
  EXPECT_EQ(rbtest::run({ROCEBENCH_BINARY, "probe", "host", "--results", (dir / "r.jsonl").string()}, dir, "old"), 2);
  EXPECT_NE(rbtest::slurp(dir / "old.err").find("names a file; --results is now the folder"), std::string::npos);
  rbtest::fs::remove_all(dir);
}
