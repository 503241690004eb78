#pragma once
// The GPU half of the micro-benchmarks (gpubench.cpp with CUDA, gpubench_unavailable.cpp without).
#include <optional>
#include <string>

#include <benchmark/benchmark.h>

#include "rocebench/microbench/hostbench.hpp"

namespace rocebench::microbench {

// Repetitions and minimum time, the same for every benchmark of a run; wall-clock time, or the
// time the benchmark reports itself (GPU events).
inline benchmark::internal::Benchmark* configured(benchmark::internal::Benchmark* b, const HostBenchOptions& o,
                                                  bool manual_time = false) {
  b->Repetitions(o.repetitions)->MinTime(o.min_time_s);
  return manual_time ? b->UseManualTime() : b->UseRealTime();
}

// Why no GPU benchmark can run here (no CUDA in this build, no GPU), or nothing when one can.
std::optional<std::string> gpu_unavailable();

// Registers H2D / D2H / D2D copies (pinned and pageable), launch latency and GEMM on every visible
// GPU, each name ending in gpu:N (a record's params.gpu).
// Call only when gpu_unavailable() said nothing.
void register_gpu_benchmarks(const HostBenchOptions& options);

// The benchmark families registered above, for skip records when they cannot run.
inline constexpr const char* kGpuFamilies[] = {"gpu_copy", "gpu_launch", "gpu_gemm"};

}  // namespace rocebench::microbench
