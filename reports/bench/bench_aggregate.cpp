// Benchmark: generates N result records shaped like the measuring modules' (models.train,
// collectives.allreduce, microbench.probe latency and bandwidth, microbench.allpairs, netcheck
// checks), spread over 10 nightly runs of one results.jsonl each with its run record, then times
// loading + aggregating them and rendering the report without PNGs.
//   rb_reports_bench [N=1000000] [REPEATS=3]
// Prints wall and CPU seconds per repeat (the machine may be shared: CPU time is the steadier figure).
// RB_BENCH_KEEP=1 keeps the generated input; RB_BENCH_REPORT=DIR also writes the report with plots.
#include <sys/resource.h>
#include <unistd.h>

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

constexpr int kRuns = 10;
constexpr int kHosts = 16;

std::string host(std::size_t i) { return fmt::format("gpu-node{:02}", i % kHosts); }

// The `samples` field as the modules write it: to_json(summarize(...)) of n measurements around `median`.
json samples_around(double median, std::size_t n, std::size_t seed) {
  std::vector<double> xs(n);
  for (std::size_t k = 0; k < n; ++k) xs[k] = median * (1.0 + 0.002 * static_cast<double>((k * 7 + seed) % 11) - 0.01);
  return to_json(summarize(xs));
}

// What harness/src/run.cpp writes first: versions, plan, and per host its RDMA devices and netdevs.
json run_record(const std::string& run, int night) {
  json r = record_header("run", run);
  r["time"] = fmt::format("2026-11-{:02}T02:00:00Z", night + 1);
  r["rocebench"] = {{"version", "0.1.0"}, {"git_revision", "abc1234"}};
  r["plan"] = {{"name", "nightly"}, {"sha256", std::string(64, 'a')}};
  r["world"] = 128;
  r["launcher"] = "mpirun";
  for (int h = 0; h < kHosts; ++h) {
    r["hosts"].push_back({{"hostname", host(h)}, {"ranks", json::array({h * 8})}, {"kernel", "Linux 6.1.0"},
                          {"cpu", {{"model", "x86"}, {"cores", 96}}}, {"memory_bytes", 1LL << 40},
                          {"rdma", {{"rdma_core", "44.0"}, {"devices", json::array()}}},
                          {"netdevs", json::array({json{{"name", "ens1f0"}, {"operstate", "up"}, {"speed_mbps", 100000}}})},
                          {"gpu", {{"devices", json::array()}}}});
  }
  return r;
}

// Record i of a run, cycling through the kinds of records a nightly plan produces.
json synthetic(std::size_t i, const std::string& run) {
  ResultRecord r;
  r.host = host(i);
  const double noise = 1.0 + static_cast<double>(i % 7) * 0.003;
  switch (i % 5) {
    case 0: {
      // Every series sweeps every point, as a plan's sweeps do: the point varies fastest.
      const int gpus = 1 << (i / 5 % 8);
      r.step = "models.train";
      r.world = gpus;
      r.params = {{"model", (i / 40) % 2 ? "resnet50" : "vgg16"}, {"engine", "cudnn"}, {"precision", "fp16"},
                  {"batch", 64}, {"mode", (i / 80) % 2 ? "allreduce-rdma" : "nccl"}};
      const double images = 1200.0 * gpus * 0.9 * noise;
      r.metrics = {{"images_per_s", images}, {"step_time_ms_p50", 64e3 * gpus / images}, {"tflops", images * 0.0123},
                   {"peak_memory_MiB", 10240}, {"loss", 6.9}};
      r.samples = samples_around(64e3 * gpus / images, 100, i);
      break;
    }
    case 1: {
      const std::size_t bytes = std::size_t{8} << (i / 5 % 24);
      const int ranks = 2 << (i / 480 % 6);
      r.step = "collectives.allreduce";
      r.world = ranks;
      r.params = {{"algorithm", (i / 120) % 2 ? "ring" : "ps"}, {"transport", (i / 240) % 2 ? "verbs" : "tcp"},
                  {"bytes", bytes}, {"count", bytes / 4}, {"dtype", "float32"}, {"op", "sum"}, {"inplace", false},
                  {"ranks", ranks}};
      const double t = 10 + static_cast<double>(bytes) / 10e3 * noise;
      const double algbw = static_cast<double>(bytes) / t / 1e3;
      r.metrics = {{"time_us", t}, {"time_us_p50", t}, {"algbw_GBps", algbw},
                   {"busbw_GBps", algbw * 2.0 * (ranks - 1) / ranks}, {"wrong", 0}};
      r.samples = samples_around(t, 20, i);
      break;
    }
    case 2: {
      const bool verbs = (i / 60) % 2;
      r.step = "microbench.probe";
      r.world = 2;
      r.host = host(i / 120);
      r.params = {{"transport", verbs ? "verbs" : "tcp"}, {"test", verbs ? "write_lat" : "lat"},
                  {"bytes", 2 << (i / 5 % 12)}, {"peer", host(i / 120 + 1)}, {"iterations", 1000}};
      if (!verbs) r.params["mode"] = "busy";
      const double lat = (verbs ? 1.6 : 12.0) * noise;
      r.metrics = {{"lat_us_min", lat * 0.9}, {"lat_us_max", lat * 4}, {"lat_us_p50", lat}, {"lat_us_avg", lat * 1.02},
                   {"lat_us_stdev", lat * 0.05}, {"lat_us_p99", lat * 1.4}, {"lat_us_p99_9", lat * 2}};
      r.samples = samples_around(lat, 998, i);
      r.samples["unit"] = "us";
      break;
    }
    case 3: {
      const bool verbs = (i / 115) % 2;
      r.step = "microbench.probe";
      r.world = 2;
      r.host = host(i / 230);
      r.params = {{"transport", verbs ? "verbs" : "tcp"}, {"test", verbs ? "write_bw" : "bw"},
                  {"bytes", 2 << (i / 5 % 23)}, {"peer", host(i / 230 + 1)}, {"iterations", 5000}};
      const double gbps = (verbs ? 92.0 : 38.0) * noise;
      r.metrics = {{"bw_peak_Gbps", gbps * 1.01}, {"bw_avg_Gbps", gbps}, {"msg_rate_Mpps", gbps / 8 / 65536 * 1e3}};
      r.samples = samples_around(gbps, 20, i);
      r.samples["unit"] = "Gbps per slice";
      r.samples["messages"] = 5000;
      break;
    }
    default: {
      r.step = "microbench.allpairs";
      r.world = kHosts;
      r.params = {{"src", r.host}, {"dst", host(i / 5 + 1)}, {"test", "write_bw"}, {"transport", "verbs"}, {"bytes", 65536}};
      r.metrics = {{"bw_avg_Gbps", 92 * noise}};
      r.samples = samples_around(92 * noise, 20, i);
      break;
    }
  }
  return to_json(r, run);
}

json check_record(std::size_t i, const std::string& run) {
  CheckRecord c;
  c.check = "roce.pfc.enabled_priorities";
  c.host = host(i);
  c.subject = "mlx5_0";
  c.expected = "3";
  c.observed = "3";
  c.hint = "mlnx_qos -i ens1f0 --pfc 0,0,0,1,0,0,0,0";
  return to_json(c, run);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU seconds of this process, all threads.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  const auto dir = std::filesystem::temp_directory_path() / fmt::format("rb-reports-bench-{}", getpid());
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  for (int night = 0; night < kRuns; ++night) {
    const std::string run = fmt::format("nightly-{:02}", night + 1);
    files.push_back((dir / (run + ".jsonl")).string());
    std::ofstream out(files.back());
    out << run_record(run, night).dump() << "\n";
    for (std::size_t i = 0; i < kHosts; ++i) out << check_record(i, run).dump() << "\n";
    for (std::size_t i = static_cast<std::size_t>(night); i < n; i += kRuns) out << synthetic(i / kRuns, run).dump() << "\n";
  }
  std::vector<double> times, cpu;
  for (int rep = 0; rep < repeats; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    Dataset data;
    for (const auto& f : files) data.load(f);
    const double loaded = seconds_since(t0);
    const Aggregate agg = aggregate(data);
    const double aggregated = seconds_since(t0);
    const std::vector<Verdict> verdicts;
    Plots plots;
    plots.missing = "not drawn in the benchmark";
    const auto sections = build_sections({&agg, &verdicts, &data.issues, &files, &plots});
    std::ofstream(dir / "report.md") << render_markdown("bench", sections, "plots");
    std::ofstream(dir / "report.html") << render_html("bench", sections);
    std::ofstream(dir / "aggregate.csv") << render_csv(agg);
    times.push_back(seconds_since(t0));
    cpu.push_back(cpu_seconds() - c0);
    std::cerr << fmt::format("{} records, {} skipped: load {:.2f} s, aggregate {:.2f} s, render {:.2f} s; wall {:.2f} s, cpu {:.2f} s\n",
                             agg.records, data.issues.size(), loaded, aggregated - loaded, times.back() - aggregated,
                             times.back(), cpu.back());
  }
  if (const char* out = std::getenv("RB_BENCH_REPORT")) {  // the full report with plots, to look at (not timed)
    Dataset data;
    for (const auto& f : files) data.load(f);
    const Aggregate agg = aggregate(data);
    const std::vector<Verdict> verdicts;
    const Plots plots = draw_plots(agg, std::filesystem::path(out) / "plots", std::chrono::minutes(10));
    const auto sections = build_sections({&agg, &verdicts, &data.issues, &files, &plots});
    std::ofstream(std::filesystem::path(out) / "report.md") << render_markdown("bench", sections, "plots");
    std::ofstream(std::filesystem::path(out) / "report.html") << render_html("bench", sections);
  }
  const Summary s = summarize(times);
  const Summary c = summarize(cpu);
  std::cout << fmt::format("aggregate+render {} records: wall median {:.2f} s (min {:.2f}, max {:.2f}), cpu median {:.2f} s "
                           "(min {:.2f}, max {:.2f}), n={}\n",
                           n, s.median, s.min, s.max, c.median, c.min, c.max, s.n);
  if (std::getenv("RB_BENCH_KEEP")) std::cout << "input kept in " << dir.string() << "\n";  // to time other tools on it
  else std::filesystem::remove_all(dir);
  return 0;
}
