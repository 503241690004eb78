#include "rocebench/collectives/sweep.hpp"

#include <cmath>
#include <cstring>
#include <iostream>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/common/bus_bandwidth.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::collectives {

double sweep_input(int rank, std::size_t i) { return 1.0 + static_cast<double>((static_cast<std::size_t>(rank) + i) % 2); }

namespace {

double reduced(int ranks, std::size_t i, ReduceOp op) {
  double sum = 0, max = 0;
  for (int r = 0; r < ranks; ++r) {
    sum += sweep_input(r, i);
    max = std::max(max, sweep_input(r, i));
  }
  return op == ReduceOp::max ? max : op == ReduceOp::avg ? sum / ranks : sum;
}

// The whole buffer is sent and received unless a collective says otherwise.
Layout whole(std::size_t count, int ranks) {
  if (count % static_cast<std::size_t>(ranks) != 0) {
    throw std::logic_error(fmt::format("sweep layout: {} elements do not split into {} blocks", count, ranks));
  }
  const std::size_t block = count / static_cast<std::size_t>(ranks);
  return {.count = count, .block = block, .send = {0, count}, .recv = {0, count}};
}

Block own_block(const Layout& l, int rank) { return {static_cast<std::size_t>(rank) * l.block, l.block}; }

// The rank whose block holds element i.
int block_owner(const Layout& l, std::size_t i) { return static_cast<int>(i / l.block); }

const std::vector<CollectiveShape>& shapes() {
  static const std::vector<CollectiveShape> all{
      {"allreduce", [](std::size_t count, int, int ranks) { return whole(count, ranks); },
       [](int, int ranks, std::size_t i, std::size_t, ReduceOp op) { return reduced(ranks, i, op); }},
      // Each rank sends its own block and receives every block.
      {"allgather",
       [](std::size_t count, int rank, int ranks) {
         Layout l = whole(count, ranks);
         l.send = own_block(l, rank);
         return l;
       },
       [](int, int ranks, std::size_t i, std::size_t count, ReduceOp) {
         return sweep_input(block_owner(whole(count, ranks), i), i);
       }},
      // Each rank sends every block and receives the reduction of its own.
      {"reduce_scatter",
       [](std::size_t count, int rank, int ranks) {
         Layout l = whole(count, ranks);
         l.recv = own_block(l, rank);
         return l;
       },
       [](int, int ranks, std::size_t i, std::size_t, ReduceOp op) { return reduced(ranks, i, op); }},
      {"broadcast", [](std::size_t count, int, int ranks) { return whole(count, ranks); },
       [](int, int, std::size_t i, std::size_t, ReduceOp) { return sweep_input(0, i); }},
      // Block k of rank r's output is block r of rank k's input.
      {"alltoall", [](std::size_t count, int, int ranks) { return whole(count, ranks); },
       [](int rank, int ranks, std::size_t i, std::size_t count, ReduceOp) {
         const Layout l = whole(count, ranks);
         return sweep_input(block_owner(l, i), static_cast<std::size_t>(rank) * l.block + i % l.block);
       }},
  };
  return all;
}

// Each backend's ranks agree on what shapes the buffers, or all refuse (as require_same on a transport).
void require_same(SweepBackend& b, double value, const std::string& what, const Deadline& deadline) {
  double range[2] = {value, -value};
  b.reduce(range, ReduceOp::max, deadline);
  refuse_unless_same(b.rank(), value, range, what);
}

// Our transports: host buffers allocated once, the host clock, the collectives of algorithms.hpp in place.
class TransportBackend final : public SweepBackend {
 public:
  TransportBackend(transport::Transport& t, const CollectiveSpec& spec, const SweepConfig& config)
      : t_(t), spec_(spec), config_(config), esize_(size_of(config.dtype)) {}

  int rank() const override { return t_.rank(); }
  int world() const override { return t_.world(); }
  json params() const override {
    json p = {{"algorithm", to_string(config_.algorithm)}, {"transport", t_.name()}};
    p.update(t_.settings());
    // The algorithm's own settings, as validated: a series is identified by all that shapes it.
    if (config_.algorithm == Algorithm::ring) p["chunk_bytes"] = config_.options.chunk_bytes;
    if (config_.algorithm == Algorithm::ps) p["servers"] = config_.options.servers;
    return p;
  }
  bool runs_in_place() const override { return true; }
  // Allocated once, for the largest size, on huge pages: faulting in fresh small pages was most of a
  // 64 MiB sweep's set-up (perf), time in which the mesh's connections sit idle.
  void allocate(std::size_t max_bytes) override {
    input_ = HostBuffer(max_bytes);
    work_ = HostBuffer(max_bytes);
  }
  // One buffer holds every block: outside the send block it starts zero.
  std::span<char> input(const Layout& l) override {
    char* buffer = input_.data();
    std::memset(buffer, 0, l.send.offset * esize_);
    std::memset(buffer + (l.send.offset + l.send.count) * esize_, 0, (l.count - l.send.offset - l.send.count) * esize_);
    return {buffer + l.send.offset * esize_, l.send.count * esize_};
  }
  void commit_input(const Layout&) override {}
  void start(const Layout& l, bool) override { std::memcpy(work_.data(), input_.data(), l.count * esize_); }
  void run(const Layout& l, bool in_place, const Deadline& deadline) override {
    // Out of place: the result lands in a second buffer, so the copy is part of the operation.
    if (!in_place) std::memcpy(work_.data(), input_.data(), l.count * esize_);
    spec_.run(t_, work_.data(), l.count, config_, deadline);
  }
  void mark() override { marks_ns_.push_back(now_ns()); }
  std::vector<double> iteration_us() override {
    std::vector<double> us;
    for (std::size_t i = 1; i < marks_ns_.size(); ++i) us.push_back(static_cast<double>(marks_ns_[i] - marks_ns_[i - 1]) / 1e3);
    marks_ns_.clear();
    return us;
  }
  void reduce(std::span<double> values, ReduceOp op, const Deadline& deadline) override {
    allreduce(t_, Algorithm::rd, values.data(), values.size(), DataType::float64, op, {}, deadline);
  }
  std::span<const char> output(const Layout& l) override {
    return {work_.data() + l.recv.offset * esize_, l.recv.count * esize_};
  }

 private:
  transport::Transport& t_;
  const CollectiveSpec& spec_;
  const SweepConfig& config_;
  const std::size_t esize_;
  HostBuffer input_, work_;
  std::vector<std::int64_t> marks_ns_;
};

}  // namespace

const CollectiveShape& collective_shape(const std::string& name) {
  for (const auto& s : shapes()) {
    if (s.name == name) return s;
  }
  throw InputError(fmt::format("collective \"{}\": not one of allreduce, allgather, reduce_scatter, broadcast, alltoall", name));
}

const CollectiveSpec& allreduce_spec() {
  static const CollectiveSpec spec{
      "allreduce", [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        allreduce(t, c.algorithm, data, count, c.dtype, c.op, c.options, d);
      }};
  return spec;
}

const CollectiveSpec& reduce_scatter_spec() {
  static const CollectiveSpec spec{
      "reduce_scatter", [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        ring_reduce_scatter(t, data, count, c.dtype, c.op, c.options.chunk_bytes, d);
        if (c.op == ReduceOp::avg) {
          const std::size_t b = segment_begin(count, t.world(), t.rank()), e = segment_begin(count, t.world(), t.rank() + 1);
          finish_average(c.dtype, static_cast<char*>(data) + b * size_of(c.dtype), e - b, t.world());
        }
      }};
  return spec;
}

const CollectiveSpec& allgather_spec() {
  static const CollectiveSpec spec{
      "allgather", [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
        ring_allgather(t, data, count, c.dtype, c.options.chunk_bytes, d);
      }};
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
  TransportBackend backend(t, spec, config);
  return run_sweep(ctx, backend, collective_shape(spec.name), config);
}

std::size_t run_sweep(StepContext& ctx, SweepBackend& b, const CollectiveShape& shape, const SweepConfig& config) {
  const int n = b.world(), r = b.rank();
  const std::size_t esize = size_of(config.dtype);
  const json series = b.params();
  const bool placements = b.runs_in_place();
  StepContext record_ctx = ctx;
  record_ctx.world = n;
  if (r == 0) {
    std::cout << fmt::format("# {} {} over {}, {} ranks, {} {}\n", shape.name, series["algorithm"].get<std::string>(),
                             series["transport"].get<std::string>(), n, to_string(config.dtype), to_string(config.op))
              << fmt::format("# {:>12} {:>12} {}{:>10} {:>9} {:>9} {:>7}\n", "size(B)", "count",
                             placements ? fmt::format("{:>6} ", "place") : "", "time(us)", "algbw", "busbw", "#wrong")
              << std::flush;
  }

  const auto sizes = sweep_sizes(config, n);
  require_same(b, static_cast<double>(sizes.back()), "the largest size (bytes)", Deadline(ctx.deadline));
  require_same(b, static_cast<double>(size_of(config.dtype) * 16 + static_cast<int>(config.dtype)), "the dtype",
               Deadline(ctx.deadline));

  std::size_t total_wrong = 0;
  b.allocate(sizes.back());
  for (const std::size_t bytes : sizes) {
    const std::size_t count = bytes / esize;
    const Layout layout = shape.layout(count, r, n);
    const std::span<char> input = b.input(layout);
    for (std::size_t i = 0; i < layout.send.count; ++i) store(config.dtype, input.data(), i, sweep_input(r, layout.send.offset + i));
    b.commit_input(layout);
    for (const bool in_place : {true, false}) {
      if ((in_place && !(config.in_place && placements)) || (!in_place && !config.out_of_place)) continue;
      // In place, each timed operation reduces the previous result again, as in nccl-tests: restoring the
      // input in between would start the ranks out of step (measured: lower busbw). The check below runs
      // once more on a fresh input.
      b.start(layout, in_place);
      for (int it = -config.warmup; it < config.iters; ++it) {
        if (it == 0) b.mark();
        b.run(layout, in_place, Deadline(ctx.deadline));  // each operation must finish within the step's wait limit
        if (it >= 0) b.mark();
      }
      std::vector<double> times_us = with_loop_and_median(b.iteration_us());
      const Deadline deadline(ctx.deadline);
      if (config.check && in_place) {
        b.start(layout, in_place);
        b.run(layout, in_place, deadline);
      }
      b.reduce(times_us, ReduceOp::max, deadline);

      double wrong = 0;
      std::size_t first_wrong = 0;
      if (config.check) {
        const double tolerance = config.op == ReduceOp::avg ? (esize == 2 ? 1e-2 : 1e-6) : 0.0;
        const std::span<const char> output = b.output(layout);
        for (std::size_t j = 0; j < layout.recv.count; ++j) {
          const std::size_t i = layout.recv.offset + j;
          const double want = shape.expected(r, n, i, count, config.op);
          if (std::fabs(load(config.dtype, output.data(), j) - want) > tolerance * std::fabs(want)) {
            if (wrong == 0) first_wrong = i;
            ++wrong;
          }
        }
      }
      ResultRecord rec;
      rec.params = series;
      rec.params.update(json{{"bytes", bytes}, {"count", count}, {"dtype", to_string(config.dtype)},
                             {"op", to_string(config.op)}, {"inplace", in_place}, {"ranks", n}});
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
      b.reduce({&wrong_all, 1}, ReduceOp::sum, deadline);
      total_wrong += static_cast<std::size_t>(wrong_all);
      if (r != 0) continue;

      const SweepTiming timing = sweep_timing(times_us);
      rec.metrics = timing.metrics(bytes, bus_factor(shape.name, n));
      rec.metrics["wrong"] = wrong_all;
      rec.samples = to_json(timing.slowest_per_iteration);
      if (wrong_all > 0) {
        rec.status = Status::fail;
        rec.reason = fmt::format("{} wrong elements over all ranks", wrong_all);
      }
      record_ctx.record(rec);
      std::cout << fmt::format("  {:>12} {:>12} {}{:>10.1f} {:>9.3f} {:>9.3f} {:>7}\n", bytes, count,
                               placements ? fmt::format("{:>6} ", in_place ? "in" : "out") : "", timing.per_op_us,
                               rec.metrics["algbw_GBps"].get<double>(), rec.metrics["busbw_GBps"].get<double>(), wrong_all)
                << std::flush;
    }
  }
  return total_wrong;
}

std::vector<double> with_loop_and_median(std::vector<double> iteration_us) {
  double total = 0;
  for (double us : iteration_us) total += us;
  const double median = median_of(iteration_us);
  iteration_us.push_back(total);
  iteration_us.push_back(median);
  return iteration_us;
}

SweepTiming sweep_timing(std::span<const double> max_reduced_us) {
  if (max_reduced_us.size() < 3) throw std::logic_error("sweep_timing: no timed iteration");
  const auto iterations = max_reduced_us.first(max_reduced_us.size() - 2);
  return {.per_op_us = max_reduced_us[iterations.size()] / static_cast<double>(iterations.size()),
          .median_op_us = max_reduced_us.back(),
          .slowest_per_iteration = summarize(iterations)};
}

json SweepTiming::metrics(std::size_t bytes, double bus_factor) const {
  const double algbw = static_cast<double>(bytes) / (per_op_us * 1e-6) / 1e9;
  return {{"time_us", per_op_us},
          {"time_us_p50", median_op_us},
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
