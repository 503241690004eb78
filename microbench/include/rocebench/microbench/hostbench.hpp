#pragma once
// Host and GPU micro-benchmarks on Google Benchmark: host memory copy and the float sum kernels the
// collectives use (GB/s next to memcpy, L1 to DRAM); with CUDA, H2D / D2H / D2D copies, kernel
// launch latency and cuBLAS GEMM. Google Benchmark decides the iteration counts and runs the
// repetitions; its JSON output becomes result records.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::microbench {

// A reduction kernel measured next to memcpy: dst[i] += src[i] over `count` elements. The harness
// hands in collectives' own kernel (reduce_into), so the real code is measured while microbench
// still depends on common only (DESIGN.md's layering).
struct SumKernel {
  std::string dtype;  // float32, float16, bfloat16
  std::size_t element_bytes = 4;
  std::function<void(void* dst, const void* src, std::size_t count)> run;
};

struct HostBenchOptions {
  std::size_t min_bytes = std::size_t{4} << 10;    // L1
  std::size_t max_bytes = std::size_t{256} << 20;  // DRAM
  int repetitions = 5;
  double min_time_s = 0.1;  // per repetition
  std::string filter = ".";  // Google Benchmark's regex on benchmark names
};

// Buffer sizes measured: every power of four from min to max (4 KiB, 16 KiB … 256 MiB).
std::vector<std::size_t> hostbench_sizes(std::size_t min_bytes, std::size_t max_bytes);

// Registers the benchmarks (replacing earlier ones), runs them and returns Google Benchmark's JSON.
// GPU benchmarks that cannot run here are not run; `gpu_skip_reason` says why (no GPU, no CUDA).
json run_hostbench(const HostBenchOptions& options, const std::vector<SumKernel>& kernels);
std::optional<std::string> gpu_skip_reason();

// Google Benchmark's JSON → one record per benchmark instance. The name carries the params
// ("sum/dtype:float16/bytes:4096" → {"benchmark": "sum", "dtype": "float16", "bytes": 4096}); the
// repetitions are the samples; metrics are bw_GBps (from bytes_per_second), the user counters and
// time_us, each as median, mean and stddev over the repetitions. A sum record also gets
// vs_memcpy: its median bandwidth over memcpy's at the same size.
std::vector<ResultRecord> records_from_gbench(const json& gbench, const std::string& step);

// The human table of those records.
std::string hostbench_table(const std::vector<ResultRecord>& records);

// `rocebench probe host …` and the plan step microbench.host (run once per host, by local rank 0).
int hostbench_main(const Args& args);  // the step's ranks bring the kernels
StepKind hostbench_step(std::vector<SumKernel> kernels);

}  // namespace rocebench::microbench
