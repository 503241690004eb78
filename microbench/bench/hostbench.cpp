#include "rocebench/microbench/hostbench.hpp"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include "gpubench.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::microbench {

std::vector<std::size_t> hostbench_sizes(std::size_t min_bytes, std::size_t max_bytes) {
  std::vector<std::size_t> out;
  for (std::size_t s = std::max<std::size_t>(min_bytes, 64); s <= max_bytes; s *= 4) out.push_back(s);
  return out;
}

namespace {

// Page-aligned and touched once, before any timing, so no page fault is measured. One pair of
// buffers of the largest size serves every benchmark of a run (Google Benchmark calls a benchmark
// several times while it settles the iteration count; allocating each time would dominate).
// Allocated when the first benchmark runs (a filter may select none of them).
class HostBuffers {
 public:
  explicit HostBuffers(std::size_t bytes) : bytes_(bytes) {}
  // 0x3c bytes are normal numbers in float32, float16 and bfloat16 (about 0.0115, 1.06 and
  // 0.0115), so no denormal or infinity slows a sum down.
  void* dst() {
    if (!dst_) {
      dst_ = allocate(bytes_, 0);
      src_ = allocate(bytes_, 0x3c);
    }
    return dst_.get();
  }
  const void* src() {
    dst();
    return src_.get();
  }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using Buffer = std::unique_ptr<std::byte, Free>;
  static Buffer allocate(std::size_t bytes, int fill) {
    Buffer b(static_cast<std::byte*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)));
    if (!b) throw std::bad_alloc();
    std::memset(b.get(), fill, bytes);
    return b;
  }
  std::size_t bytes_;
  Buffer dst_, src_;
};

// Bytes are counted as STREAM counts them: every byte read plus every byte written. memcpy reads
// and writes the buffer once (2x); a sum reads dst and src and writes dst (3x).
void register_host_benchmarks(const HostBenchOptions& o, const std::vector<SumKernel>& kernels,
                              const std::shared_ptr<HostBuffers>& buffers) {
  for (const std::size_t bytes : hostbench_sizes(o.min_bytes, o.max_bytes)) {
    configured(benchmark::RegisterBenchmark(fmt::format("memcpy/bytes:{}", bytes).c_str(),
                                            [bytes, buffers](benchmark::State& state) {
                                              for (auto _ : state) {
                                                std::memcpy(buffers->dst(), buffers->src(), bytes);
                                                benchmark::ClobberMemory();
                                              }
                                              state.counters["bytes_moved"] = 2.0 * static_cast<double>(bytes);
                                            }),
               o);
    for (const SumKernel& kernel : kernels) {
      const std::string name = fmt::format("sum/dtype:{}/bytes:{}", kernel.dtype, bytes);
      configured(benchmark::RegisterBenchmark(name.c_str(),
                                              [bytes, kernel, buffers](benchmark::State& state) {
                                                const std::size_t count = bytes / kernel.element_bytes;
                                                for (auto _ : state) {
                                                  kernel.run(buffers->dst(), buffers->src(), count);
                                                  benchmark::ClobberMemory();
                                                }
                                                state.counters["bytes_moved"] = 3.0 * static_cast<double>(bytes);
                                              }),
                 o);
    }
  }
}

// "sum/dtype:float16/bytes:4096" → {"benchmark": "sum", "dtype": "float16", "bytes": 4096}.
json params_of(const std::string& run_name) {
  json params = json::object();
  std::size_t at = 0;
  for (bool first = true; at <= run_name.size(); first = false) {
    const std::size_t end = std::min(run_name.find('/', at), run_name.size());
    const std::string part = run_name.substr(at, end - at);
    at = end + 1;
    if (first) {
      params["benchmark"] = part;
      continue;
    }
    const auto colon = part.find(':');
    if (colon == std::string::npos) {  // a Google Benchmark suffix such as "real_time"
      if (part != "real_time" && part != "manual_time") params["arg"] = part;
      continue;
    }
    const std::string key = part.substr(0, colon), value = part.substr(colon + 1);
    if (key == "min_time" || key == "repeats" || key == "iterations" || key == "threads") continue;  // Google Benchmark's own
    const bool number = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    if (number) params[key] = std::stoll(value);
    else params[key] = value;
  }
  return params;
}

double to_seconds(double value, const std::string& unit) {
  if (unit == "ns") return value / 1e9;
  if (unit == "us") return value / 1e6;
  if (unit == "ms") return value / 1e3;
  return value;
}

// The named numbers of one repetition. Benchmarks state what one iteration does in two counters,
// bytes_moved and flop, and the rates are computed here from the iteration's real (or manual,
// GPU-event) time: Google Benchmark's own bytes_per_second may divide by CPU time instead.
std::map<std::string, double> metrics_of(const json& run) {
  std::map<std::string, double> m;
  const double seconds = to_seconds(run.value("real_time", 0.0), run.value("time_unit", "ns"));
  if (seconds <= 0) return m;
  if (run.contains("bytes_moved")) m["bw_GBps"] = run["bytes_moved"].get<double>() / seconds / 1e9;
  if (run.contains("flop")) m["TFLOP_per_s"] = run["flop"].get<double>() / seconds / 1e12;
  m["time_us"] = seconds * 1e6;
  return m;
}

std::string headline_of(const std::map<std::string, double>& metrics) {
  for (const char* name : {"bw_GBps", "TFLOP_per_s"}) {
    if (metrics.contains(name)) return name;
  }
  return "time_us";
}

}  // namespace

std::vector<ResultRecord> records_from_gbench(const json& gbench, const std::string& step) {
  struct Instance {
    std::pair<int, int> order;  // registration order (repetitions may run interleaved at random)
    std::string name;
    std::vector<std::map<std::string, double>> repetitions;
    std::vector<double> iterations;
    std::optional<std::string> error;
  };
  std::vector<Instance> instances;
  std::map<std::string, std::size_t> index;
  for (const json& run : gbench.value("benchmarks", json::array())) {
    if (run.value("run_type", "iteration") != "iteration") continue;  // aggregates: recomputed below
    const std::string name = run.value("run_name", run.value("name", ""));
    auto [it, fresh] = index.try_emplace(name, instances.size());
    if (fresh) {
      instances.push_back({{run.value("family_index", 0), run.value("per_family_instance_index", 0)}, name, {}, {}, std::nullopt});
    }
    Instance& in = instances[it->second];
    if (run.value("error_occurred", false)) {
      in.error = run.value("error_message", "the benchmark reported an error");
      continue;
    }
    auto metrics = metrics_of(run);
    if (metrics.empty()) {
      in.error = "the benchmark reported no time";
      continue;
    }
    in.repetitions.push_back(std::move(metrics));
    in.iterations.push_back(run.value("iterations", 0.0));
  }

  std::stable_sort(instances.begin(), instances.end(), [](const Instance& a, const Instance& b) { return a.order < b.order; });

  std::vector<ResultRecord> out;
  for (const Instance& in : instances) {
    ResultRecord r;
    r.step = step;
    r.params = params_of(in.name);
    if (in.error || in.repetitions.empty()) {
      r.status = Status::error;
      r.reason = in.error.value_or("no repetition finished");
      r.samples = {{"n", 0}};
      out.push_back(std::move(r));
      continue;
    }
    const std::string headline = headline_of(in.repetitions.front());
    for (const auto& [name, unused] : in.repetitions.front()) {
      std::vector<double> values;
      for (const auto& rep : in.repetitions) values.push_back(rep.at(name));
      const Summary s = summarize(values);
      r.metrics[name + "_median"] = s.median;
      r.metrics[name + "_mean"] = s.avg;
      // The sample standard deviation (n − 1), as Google Benchmark's stddev aggregate; the samples'
      // stdev below is the population one, as every record's (common/stats.hpp names both).
      r.metrics[name + "_stddev"] = values.size() > 1 ? sample_stdev(values) : 0.0;
      if (name == headline) {
        r.samples = to_json(s);
        r.samples["metric"] = name;
        r.samples["values"] = values;
        r.samples["iterations"] = in.iterations;
      }
    }
    out.push_back(std::move(r));
  }

  std::map<std::int64_t, double> memcpy_GBps;  // bytes → median
  for (const ResultRecord& r : out) {
    if (r.status == Status::ok && r.params.value("benchmark", "") == "memcpy") {
      memcpy_GBps[r.params.value("bytes", std::int64_t{0})] = r.metrics["bw_GBps_median"];
    }
  }
  for (ResultRecord& r : out) {
    const auto it = memcpy_GBps.find(r.params.value("bytes", std::int64_t{0}));
    if (r.status == Status::ok && r.params.value("benchmark", "") == "sum" && it != memcpy_GBps.end() && it->second > 0) {
      r.metrics["vs_memcpy"] = r.metrics["bw_GBps_median"].get<double>() / it->second;
    }
  }
  return out;
}

std::string hostbench_table(const std::vector<ResultRecord>& records) {
  std::string out = fmt::format("{:<12} {:<10} {:>12} {:>14} {:>10} {:>6} {:>10}\n", "#benchmark", "dtype", "bytes",
                                "median", "stddev", "n", "vs memcpy");
  for (const ResultRecord& r : records) {
    const std::string benchmark = r.params.value("benchmark", "");
    const std::string what = r.params.contains("dtype") ? r.params["dtype"].get<std::string>()
                             : r.params.contains("dir") ? r.params["dir"].get<std::string>()
                                                        : r.params.value("arg", "");
    const std::string bytes = r.params.contains("bytes") ? std::to_string(r.params["bytes"].get<std::int64_t>()) : "";
    if (r.status != Status::ok) {
      out += fmt::format("{:<12} {:<10} {:>12} {}: {}\n", benchmark, what, bytes, to_string(r.status), r.reason);
      continue;
    }
    const std::string metric = r.samples.value("metric", "time_us");
    const std::string unit = metric == "bw_GBps" ? "GB/s" : metric == "time_us" ? "us" : metric;
    out += fmt::format("{:<12} {:<10} {:>12} {:>9.3f} {:<4} {:>10.3f} {:>6} {:>10}\n", benchmark, what, bytes,
                       r.metrics.value(metric + "_median", 0.0), unit, r.metrics.value(metric + "_stddev", 0.0),
                       r.samples.value("n", 0),
                       r.metrics.contains("vs_memcpy") ? fmt::format("{:.3f}", r.metrics["vs_memcpy"].get<double>()) : "");
  }
  return out;
}

std::optional<std::string> gpu_skip_reason() { return gpu_unavailable(); }

namespace {

// Throws UsageError naming the flag of the first option out of its bounds.
void refuse_bad_options(const HostBenchOptions& o) {
  if (o.repetitions < 1) throw UsageError("--repetitions must be at least 1");
  if (o.min_time_s <= 0) throw UsageError("--min-time must be above 0");
  if (o.min_bytes > o.max_bytes) throw UsageError("--min-bytes is above --max-bytes");
  try {
    std::regex check(o.filter);
  } catch (const std::regex_error& e) {
    throw UsageError(fmt::format("--filter '{}' is not a regular expression: {}", o.filter, e.what()));
  }
}

}  // namespace

json run_hostbench(const HostBenchOptions& o, const std::vector<SumKernel>& kernels) {
  refuse_bad_options(o);
  static const bool initialized = [] {
    // Repetitions of different benchmarks interleaved in random order: a load that comes and goes
    // on a shared machine then hits memcpy and the sums alike, which keeps their ratio honest.
    // Google Benchmark keeps argv[0] (the context's "executable"), so the strings live forever.
    static std::string program = "rocebench", interleave = "--benchmark_enable_random_interleaving=true";
    static char* argv[] = {program.data(), interleave.data(), nullptr};
    int argc = 2;
    benchmark::Initialize(&argc, argv);
    return true;
  }();
  (void)initialized;

  benchmark::ClearRegisteredBenchmarks();
  const auto sizes = hostbench_sizes(o.min_bytes, o.max_bytes);
  if (!sizes.empty()) register_host_benchmarks(o, kernels, std::make_shared<HostBuffers>(sizes.back()));
  if (!gpu_unavailable()) register_gpu_benchmarks(o);
  std::ostringstream out, err;
  benchmark::JSONReporter reporter;
  reporter.SetOutputStream(&out);
  reporter.SetErrorStream(&err);
  const std::size_t ran = benchmark::RunSpecifiedBenchmarks(&reporter, o.filter);
  benchmark::ClearRegisteredBenchmarks();
  if (ran == 0) throw UsageError(fmt::format("no benchmark matches --filter '{}'", o.filter));
  return json::parse(out.str());
}

namespace {

json hostbench_params_schema() {
  return json::parse(R"({
    "type": "object", "additionalProperties": false,
    "properties": {
      "min_bytes": {"type": "integer", "minimum": 64},
      "max_bytes": {"type": "integer", "minimum": 64},
      "repetitions": {"type": "integer", "minimum": 1},
      "min_time_s": {"type": "number", "exclusiveMinimum": 0},
      "filter": {"type": "string", "minLength": 1}
    }})");
}

HostBenchOptions options_from(const json& p) {
  HostBenchOptions o;
  o.min_bytes = p.value("min_bytes", o.min_bytes);
  o.max_bytes = p.value("max_bytes", o.max_bytes);
  o.repetitions = p.value("repetitions", o.repetitions);
  o.min_time_s = p.value("min_time_s", o.min_time_s);
  o.filter = p.value("filter", o.filter);
  return o;
}

// Every record of one run: the measured ones and a skip per GPU family that cannot run here.
std::vector<ResultRecord> records_of_run(const json& gbench, const std::string& step) {
  std::vector<ResultRecord> records = records_from_gbench(gbench, step);
  if (const auto reason = gpu_unavailable()) {
    for (const char* family : kGpuFamilies) {
      ResultRecord r;
      r.step = step;
      r.params = {{"benchmark", family}};
      r.samples = {{"n", 0}};
      r.status = Status::skip;
      r.reason = *reason;
      records.push_back(std::move(r));
    }
  }
  return records;
}

}  // namespace

// `rocebench probe host`: the microbench.host step as a one-step plan, one rank unless told.
int hostbench_main(const Args& args) {
  const std::string program = "rocebench probe host";
  return run_guarded(program, [&]() -> int {
    HostBenchOptions o;
    std::string min_bytes = "4K", max_bytes = "256M";
    LauncherFlags launcher(1);
    ArgParser p(program,
                "Host memory bandwidth (memcpy) and the collectives' float sum kernels (float32; float16 and\n"
                "bfloat16 summed in float32) in GB/s at sizes from L1 to DRAM, bytes counted as STREAM does\n"
                "(read + written); with CUDA and a GPU also H2D / D2H / D2D copies, launch latency and cuBLAS\n"
                "GEMM. Google Benchmark picks the iteration counts; the repetitions are the samples.\n"
                "Runs the microbench.host step on one local rank (or once per host of --hostfile) and records to\n"
                "rocebench-results/<run>/.");
    p.option("--min-bytes", &min_bytes, "smallest buffer (default 4K)", "BYTES")
        .option("--max-bytes", &max_bytes, "largest buffer (default 256M)", "BYTES")
        .option("--repetitions", &o.repetitions, "repetitions of each benchmark (default 5)")
        .option("--min-time", &o.min_time_s, "seconds each repetition runs at least (default 0.1)", "S")
        .option("--filter", &o.filter, "regular expression on benchmark names, e.g. 'memcpy|sum' (default all)",
                "REGEX");
    launcher.add_to(p);
    if (!p.parse(args)) return kExitOk;
    o.min_bytes = parse_bytes("--min-bytes", min_bytes);
    o.max_bytes = parse_bytes("--max-bytes", max_bytes);
    refuse_bad_options(o);  // before any rank starts
    json params = {{"min_bytes", o.min_bytes}, {"max_bytes", o.max_bytes}, {"repetitions", o.repetitions},
                   {"min_time_s", o.min_time_s}};
    if (!o.filter.empty()) params["filter"] = o.filter;
    const CommandOrigin origin{program, {{"min_bytes", "--min-bytes"}, {"max_bytes", "--max-bytes"},
                                         {"repetitions", "--repetitions"}, {"min_time_s", "--min-time"}, {"filter", "--filter"}}};
    return run_step_as_plan("microbench.host", params, launcher.to_args(), origin);
  });
}

StepKind hostbench_step(std::vector<SumKernel> kernels) {
  return {"microbench.host",
          "host memcpy and sum-kernel bandwidth, GPU copies / launch latency / GEMM (Google Benchmark), once per host",
          hostbench_params_schema(), [kernels = std::move(kernels)](StepContext& ctx) {
            if (ctx.local_rank != 0) return;  // one measurement per host: its ranks would share the memory bus
            std::vector<ResultRecord> records = records_of_run(run_hostbench(options_from(ctx.params), kernels), ctx.step);
            std::cout << hostbench_table(records) << std::flush;
            for (ResultRecord& r : records) ctx.record(std::move(r));
          }};
}

}  // namespace rocebench::microbench
