#include "rocebench/collectives/sweep.hpp"

#include <cmath>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/common/bus_bandwidth.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::collectives {

namespace {

constexpr double kNotChecked = std::numeric_limits<double>::quiet_NaN();

// Small integers, exact in every type when summed over up to 128 ranks.
double check_value(int rank, std::size_t i) { return 1.0 + static_cast<double>((static_cast<std::size_t>(rank) + i) % 2); }

double reduced(int ranks, std::size_t i, ReduceOp op) {
  double sum = 0, max = 0;
  for (int r = 0; r < ranks; ++r) {
    sum += check_value(r, i);
    max = std::max(max, check_value(r, i));
  }
  return op == ReduceOp::max ? max : op == ReduceOp::avg ? sum / ranks : sum;
}

int owner_of(std::size_t i, std::size_t count, int ranks) {
  int s = static_cast<int>(i * static_cast<std::size_t>(ranks) / std::max<std::size_t>(count, 1));
  while (s + 1 < ranks && segment_begin(count, ranks, s + 1) <= i) ++s;
  while (s > 0 && segment_begin(count, ranks, s) > i) --s;
  return s;
}

}  // namespace

const CollectiveSpec& allreduce_spec() {
  static const CollectiveSpec spec{
      "allreduce",
      [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        allreduce(t, c.algorithm, data, count, c.dtype, c.op, c.options, d);
      },
      [](int rank, int, std::size_t i, std::size_t) { return check_value(rank, i); },
      [](int, int ranks, std::size_t i, std::size_t, ReduceOp op) { return reduced(ranks, i, op); }};
  return spec;
}

const CollectiveSpec& reduce_scatter_spec() {
  static const CollectiveSpec spec{
      "reduce_scatter",
      [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        ring_reduce_scatter(t, data, count, c.dtype, c.op, c.options.chunk_bytes, d);
        if (c.op == ReduceOp::avg) {
          const std::size_t b = segment_begin(count, t.world(), t.rank()), e = segment_begin(count, t.world(), t.rank() + 1);
          finish_average(c.dtype, static_cast<char*>(data) + b * size_of(c.dtype), e - b, t.world());
        }
      },
      [](int rank, int, std::size_t i, std::size_t) { return check_value(rank, i); },
      [](int rank, int ranks, std::size_t i, std::size_t count, ReduceOp op) {
        return owner_of(i, count, ranks) == rank ? reduced(ranks, i, op) : kNotChecked;
      }};
  return spec;
}

const CollectiveSpec& allgather_spec() {
  static const CollectiveSpec spec{
      "allgather",
      [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        ring_allgather(t, data, count, c.dtype, c.options.chunk_bytes, d);
      },
      [](int rank, int ranks, std::size_t i, std::size_t count) {
        return owner_of(i, count, ranks) == rank ? check_value(rank, i) : kNotChecked;
      },
      [](int, int ranks, std::size_t i, std::size_t count, ReduceOp) { return check_value(owner_of(i, count, ranks), i); }};
  return spec;
}

std::vector<std::size_t> sweep_sizes(const SweepConfig& config, int ranks) {
  const std::size_t unit = size_of(config.dtype) * static_cast<std::size_t>(ranks);
  std::vector<std::size_t> sizes;
  for (std::size_t b = config.min_bytes; b <= config.max_bytes;) {
    const std::size_t rounded = std::max(unit, b / unit * unit);
    if (sizes.empty() || sizes.back() != rounded) sizes.push_back(rounded);
    if (config.factor <= 1 || b > config.max_bytes / static_cast<std::size_t>(config.factor)) break;  // no wrap-around
    b *= static_cast<std::size_t>(config.factor);
  }
  return sizes;
}

std::size_t run_sweep(StepContext& ctx, transport::Transport& t, const CollectiveSpec& spec, const SweepConfig& config) {
  const int n = t.world(), r = t.rank();
  const std::size_t esize = size_of(config.dtype);
  StepContext record_ctx = ctx;
  record_ctx.world = n;
  if (r == 0) {
    std::cout << fmt::format("# {} {} over {}, {} ranks, {} {}\n", spec.name, to_string(config.algorithm), t.name(), n,
                             to_string(config.dtype), to_string(config.op))
              << fmt::format("# {:>12} {:>12} {:>6} {:>10} {:>9} {:>9} {:>7}\n", "size(B)", "count", "place",
                             "time(us)", "algbw", "busbw", "#wrong")
              << std::flush;
  }

  const auto sizes = sweep_sizes(config, n);
  require_same(t, static_cast<double>(sizes.back()), "the largest size (bytes)", Deadline(ctx.deadline));
  require_same(t, static_cast<double>(size_of(config.dtype) * 16 + static_cast<int>(config.dtype)), "the dtype",
               Deadline(ctx.deadline));

  std::size_t total_wrong = 0;
  // Allocated once, for the largest size, on huge pages: faulting in fresh small pages was most of a
  // 64 MiB sweep's set-up (perf), time in which the mesh's connections sit idle.
  HostBuffer input(sizes.back()), work(sizes.back());
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / esize;
    for (std::size_t i = 0; i < count; ++i) {
      const double v = spec.input(r, n, i, count);
      store(config.dtype, input.data(), i, std::isnan(v) ? 0.0 : v);
    }
    for (const bool in_place : {true, false}) {
      if ((in_place && !config.in_place) || (!in_place && !config.out_of_place)) continue;
      std::vector<double> times_us;
      // In place, each timed operation reduces the previous result again, as in nccl-tests: restoring the
      // input in between would start the ranks out of step (measured: lower busbw). The check below runs
      // once more on a fresh input.
      std::memcpy(work.data(), input.data(), bytes);
      for (int it = -config.warmup; it < config.iters; ++it) {
        const Deadline deadline(ctx.deadline);  // each operation must finish within the step's wait limit
        const std::int64_t t0 = now_ns();
        // Out of place: the result lands in a second buffer, so the copy is part of the operation.
        if (!in_place) std::memcpy(work.data(), input.data(), bytes);
        spec.run(t, work.data(), count, config, deadline);
        const double us = static_cast<double>(now_ns() - t0) / 1e3;
        if (it >= 0) times_us.push_back(us);
      }
      const Deadline deadline(ctx.deadline);
      if (config.check && in_place) {
        std::memcpy(work.data(), input.data(), bytes);
        spec.run(t, work.data(), count, config, deadline);
      }
      times_us = with_loop_total(std::move(times_us));
      allreduce(t, Algorithm::rd, times_us.data(), times_us.size(), DataType::float64, ReduceOp::max, {}, deadline);

      double wrong = 0;
      std::size_t first_wrong = 0;
      if (config.check) {
        const double tolerance = config.op == ReduceOp::avg ? (esize == 2 ? 1e-2 : 1e-6) : 0.0;
        for (std::size_t i = 0; i < count; ++i) {
          const double want = spec.expected(r, n, i, count, config.op);
          if (std::isnan(want)) continue;
          if (std::fabs(load(config.dtype, work.data(), i) - want) > tolerance * std::fabs(want)) {
            if (wrong == 0) first_wrong = i;
            ++wrong;
          }
        }
      }
      ResultRecord rec;
      rec.params = {{"algorithm", to_string(config.algorithm)}, {"transport", t.name()}, {"bytes", bytes},
                    {"count", count}, {"dtype", to_string(config.dtype)}, {"op", to_string(config.op)},
                    {"inplace", in_place}, {"ranks", n}};
      rec.params.update(t.settings());
      // The algorithm's own settings, as validated: a series is identified by all that shapes it.
      if (config.algorithm == Algorithm::ring) rec.params["chunk_bytes"] = config.options.chunk_bytes;
      if (config.algorithm == Algorithm::ps) rec.params["servers"] = config.options.servers;
      if (wrong > 0) {
        ResultRecord bad = rec;
        bad.status = Status::fail;
        bad.metrics = {{"wrong", wrong}};
        bad.samples = {{"n", 0}};
        bad.reason = fmt::format("rank {} on host {}: {} wrong elements, the first at element {} (byte offset {})", r,
                                 ctx.host, wrong, first_wrong, first_wrong * esize);
        record_ctx.record(bad);
      }
      double wrong_all = wrong;
      allreduce(t, Algorithm::rd, &wrong_all, 1, DataType::float64, ReduceOp::sum, {}, deadline);
      total_wrong += static_cast<std::size_t>(wrong_all);
      if (r != 0) continue;

      const SweepTiming timing = sweep_timing(times_us);
      rec.metrics = timing.metrics(bytes, bus_factor(spec.name, n));
      rec.metrics["wrong"] = wrong_all;
      rec.samples = to_json(timing.slowest_per_iteration);
      if (wrong_all > 0) {
        rec.status = Status::fail;
        rec.reason = fmt::format("{} wrong elements over all ranks", wrong_all);
      }
      record_ctx.record(rec);
      std::cout << fmt::format("  {:>12} {:>12} {:>6} {:>10.1f} {:>9.3f} {:>9.3f} {:>7}\n", bytes, count,
                               in_place ? "in" : "out", timing.per_op_us, rec.metrics["algbw_GBps"].get<double>(),
                               rec.metrics["busbw_GBps"].get<double>(), wrong_all)
                << std::flush;
    }
  }
  return total_wrong;
}

std::vector<double> with_loop_total(std::vector<double> iteration_us) {
  double total = 0;
  for (double us : iteration_us) total += us;
  iteration_us.push_back(total);
  return iteration_us;
}

SweepTiming sweep_timing(std::span<const double> max_reduced_us) {
  if (max_reduced_us.size() < 2) throw std::logic_error("sweep_timing: no timed iteration");
  const auto iterations = max_reduced_us.first(max_reduced_us.size() - 1);
  return {max_reduced_us.back() / static_cast<double>(iterations.size()), summarize(iterations)};
}

json SweepTiming::metrics(std::size_t bytes, double bus_factor) const {
  const double algbw = static_cast<double>(bytes) / (per_op_us * 1e-6) / 1e9;
  return {{"time_us", per_op_us},
          {"time_us_p50", slowest_per_iteration.median},
          {"algbw_GBps", algbw},
          {"busbw_GBps", algbw * bus_factor}};
}

const OptionTable& sweep_options() {
  static const OptionTable table = [] {
    const SweepConfig d;
    const std::string& own = kOwnTransportsOnly;
    std::vector<OptionSpec> specs{
        {.key = "algorithm", .flag = "--algorithm", .type = OptionType::text, .rules = {{"enum", {"ring", "ps", "rd"}}},
         .fallback = to_string(d.algorithm), .help = "ring | ps (parameter server) | rd (recursive doubling)",
         .family = own, .metavar = "NAME"},
        {.key = "min_bytes", .flag = "-b", .type = OptionType::size, .rules = {{"minimum", 1}}, .fallback = d.min_bytes,
         .help = "smallest size (8, 64K, 1M …)"},
        {.key = "max_bytes", .flag = "-e", .type = OptionType::size, .rules = {{"minimum", 1}}, .fallback = d.max_bytes,
         .help = "largest size"},
        {.key = "factor", .flag = "-f", .rules = {{"minimum", 1}}, .fallback = d.factor, .help = "size multiplication factor"},
        {.key = "warmup", .flag = "-w", .rules = {{"minimum", 0}}, .fallback = d.warmup, .help = "warm-up iterations per size"},
        {.key = "iters", .flag = "-n", .rules = {{"minimum", 1}}, .fallback = d.iters, .help = "timed iterations per size"},
        {.key = "dtype", .flag = "--dtype", .type = OptionType::text, .rules = {{"enum", {"float32", "float16", "bfloat16"}}},
         .fallback = to_string(d.dtype), .help = "element type", .metavar = "TYPE"},
        {.key = "op", .flag = "--op", .type = OptionType::text, .rules = {{"enum", {"sum", "avg", "max"}}},
         .fallback = to_string(d.op), .help = "reduction", .metavar = "OP"},
        {.key = "check", .flag = "--no-check", .type = OptionType::boolean, .fallback = d.check,
         .help = "skip the check of every element"},
        {.key = "placement", .flag = "--placement", .type = OptionType::text, .rules = {{"enum", {"both", "in", "out"}}},
         .fallback = "both", .help = "in-place, out-of-place or both", .family = own, .metavar = "WHICH"},
        {.key = "chunk_bytes", .flag = "--chunk", .type = OptionType::size, .rules = {{"minimum", 64}},
         .fallback = d.options.chunk_bytes, .help = "ring pipelining chunk", .family = own},
        {.key = "servers", .flag = "--servers", .rules = {{"minimum", 1}}, .fallback = d.options.servers,
         .help = "parameter-server ranks (S)", .family = own},
        {.key = "world_sizes", .flag = "--world-sizes", .type = OptionType::integer_list, .rules = {{"minimum", 1}},
         .help = "rank counts to sweep, e.g. 1,2,4 (default: every rank)", .family = own},
    };
    const auto& transport = transport_options().specs();
    specs.insert(specs.end(), transport.begin(), transport.end());
    return OptionTable(std::move(specs));
  }();
  return table;
}

json sweep_params_schema() { return sweep_options().schema(); }

SweepConfig sweep_config_from(const json& p) {
  const OptionTable& o = sweep_options();
  SweepConfig c;
  c.algorithm = parse_algorithm(o.get<std::string>(p, "algorithm"));
  c.dtype = parse_dtype(o.get<std::string>(p, "dtype"));
  c.op = parse_op(o.get<std::string>(p, "op"));
  c.min_bytes = o.get<std::size_t>(p, "min_bytes");
  c.max_bytes = o.get<std::size_t>(p, "max_bytes");
  c.factor = o.get<int>(p, "factor");
  c.warmup = o.get<int>(p, "warmup");
  c.iters = o.get<int>(p, "iters");
  c.check = o.get<bool>(p, "check");
  const auto placement = o.get<std::string>(p, "placement");
  c.in_place = placement != "out";
  c.out_of_place = placement != "in";
  c.options.chunk_bytes = o.get<std::size_t>(p, "chunk_bytes");
  c.options.servers = o.get<int>(p, "servers");
  if (c.min_bytes > c.max_bytes)
    throw InputError(fmt::format("field 'max_bytes': {} is smaller than min_bytes {}; the sweep would have no size",
                                 c.max_bytes, c.min_bytes));
  return c;
}

}  // namespace rocebench::collectives
