// Benchmark: generates N result records (training sweeps, collective sweeps, probes, all pairs) in
// a results.jsonl, then times loading + aggregating them and rendering the report without PNGs.
//   rb_reports_bench [N=1000000] [REPEATS=3]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/stats.hpp"
#include "rocebench/reports/tables.hpp"

using namespace rocebench;
using namespace rocebench::reports;

namespace {

// Record i of the synthetic run: a few thousand distinct series, repeated across 10 runs.
json synthetic(std::size_t i) {
  ResultRecord r;
  const std::string run = "night-" + std::to_string(i % 10);
  r.host = "node" + std::to_string(i % 32);
  const int kind = static_cast<int>(i % 4);
  const double noise = 1.0 + static_cast<double>(i % 7) * 0.003;
  if (kind == 0) {
    const int gpus = 1 << (i / 4 % 8);
    r.step = "models.train";
    r.world = gpus;
    r.rank = 0;
    r.params = {{"model", (i / 32) % 2 ? "resnet50" : "vgg16"}, {"engine", "cudnn"}, {"precision", "fp16"}, {"batch", 64},
                {"mode", (i / 64) % 2 ? "allreduce-rdma" : "allreduce-tcp"}};
    r.metrics = {{"images_per_s", 1000.0 * gpus * 0.9 * noise}, {"step_time_ms_p50", 70 * noise}};
  } else if (kind == 1) {
    const double bytes = static_cast<double>(1ull << (i / 4 % 27));
    r.step = "collectives.allreduce";
    r.world = 2 << (i / 128 % 6);
    r.params = {{"algorithm", (i / 8) % 2 ? "ring" : "ps"}, {"transport", (i / 16) % 2 ? "verbs" : "tcp"}, {"bytes", bytes},
                {"dtype", "float32"}, {"inplace", false}};
    const double t = 10 + bytes / 10e3 * noise;
    r.metrics = {{"time_us", t}, {"algbw_GBps", bytes / t / 1e3}, {"busbw_GBps", bytes / t / 1e3 * 1.8}, {"wrong", 0}};
  } else if (kind == 2) {
    r.step = "microbench.probe";
    r.world = 2;
    r.params = {{"transport", (i / 8) % 2 ? "verbs" : "tcp"}, {"test", "write_lat"}, {"bytes", 1 << (i / 16 % 12)},
                {"peer", "node" + std::to_string((i + 1) % 32)}};
    r.metrics = {{"lat_us_p50", 1.6 * noise}, {"lat_us_p99", 2.1 * noise}, {"lat_us_p99_9", 3.5 * noise}};
  } else {
    r.step = "microbench.allpairs";
    r.world = 32;
    r.params = {{"src", r.host}, {"dst", "node" + std::to_string(i / 4 % 32)}, {"test", "write_bw"}};
    r.metrics = {{"bw_avg_Gbps", 92 * noise}};
  }
  const std::vector<double> xs{0.98, 0.99, 1.0, 1.01, 1.02};
  r.samples = to_json(summarize(xs));
  return to_json(r, run);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const auto dir = std::filesystem::temp_directory_path() / "rb-reports-bench";
  std::filesystem::create_directories(dir);
  const auto file = dir / "results.jsonl";
  {
    std::ofstream out(file);
    for (std::size_t i = 0; i < n; ++i) out << synthetic(i).dump() << "\n";
  }
  std::vector<double> times;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    Dataset data;
    data.load(file);
    const double loaded = seconds_since(t0);
    const Aggregate agg = aggregate(data);
    const double aggregated = seconds_since(t0);
    const std::vector<Verdict> verdicts;
    const std::vector<std::string> files{file.string()};
    Plots plots;
    plots.missing = "not drawn in the benchmark";
    const auto sections = build_sections({&agg, &verdicts, &data.issues, &files, &plots});
    std::ofstream(dir / "report.md") << render_markdown("bench", sections, "plots");
    std::ofstream(dir / "report.html") << render_html("bench", sections);
    std::ofstream(dir / "aggregate.csv") << render_csv(agg);
    times.push_back(seconds_since(t0));
    std::cerr << fmt::format("{} records, {} skipped: load {:.2f} s, aggregate {:.2f} s, render {:.2f} s\n", agg.records,
                             data.issues.size(), loaded, aggregated - loaded, times.back() - aggregated);
  }
  const Summary s = summarize(times);
  std::cout << fmt::format("aggregate+render {} records: median {:.2f} s (min {:.2f}, max {:.2f}, n={})\n", n, s.median, s.min,
                           s.max, s.n);
  if (!std::getenv("RB_BENCH_KEEP")) std::filesystem::remove_all(dir);  // keep the input to look at
  return 0;
}
