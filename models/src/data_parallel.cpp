#include "rocebench/models/data_parallel.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <iostream>
#include <numeric>

#include <fmt/format.h>
#include <omp.h>
#include <unistd.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_buffer.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/models/cpu_share.hpp"
#include "rocebench/models/train.hpp"
#include "rocebench/models/zoo.hpp"
#include "shape.hpp"

namespace rocebench::models {

using collectives::BucketOptions;

std::vector<int> params_in_ready_order(const Graph& graph) {
  std::vector<int> order;
  for (int i = static_cast<int>(graph.nodes().size()) - 1; i > 0; --i)
    for (int p : graph.node(i).params) order.push_back(p);
  return order;
}

std::vector<std::size_t> gradient_sizes(const Graph& graph) {
  std::vector<std::size_t> sizes;
  for (int p : params_in_ready_order(graph)) sizes.push_back(static_cast<std::size_t>(graph.params()[static_cast<std::size_t>(p)].size()));
  return sizes;
}

double StepTimes::comm_ms() const {
  double sum = 0;
  for (const auto& b : buckets) sum += static_cast<double>(b.end_ns - b.start_ns) / 1e6;
  return sum;
}

double StepTimes::handoff_ms() const {
  if (buckets.empty()) return 0;
  auto exposed_part = [this](std::int64_t from, std::int64_t to) {  // of [from, to), ms
    return static_cast<double>(std::max<std::int64_t>(0, std::min(to, reduced_ns) - std::max(from, backward_end_ns))) / 1e6;
  };
  double sum = 0;
  std::int64_t free_ns = 0;  // when the communication thread was done with the bucket before
  for (const auto& b : buckets) {
    sum += exposed_part(std::max(b.sealed_ns, free_ns), b.start_ns);
    free_ns = b.end_ns;
  }
  return sum + exposed_part(free_ns, reduced_ns);
}

DataParallel::DataParallel(Engine& engine, transport::Transport* transport, const BucketOptions& buckets,
                           std::chrono::milliseconds deadline)
    : engine_(engine) {
  if (transport && transport->world() > 1) buckets_.emplace(*transport, buckets, deadline);
}

StepTimes DataParallel::step(const SgdOptions& sgd, double lr) {
  StepTimes t;
  t.start_ns = now_ns();
  engine_.forward();
  t.forward_end_ns = now_ns();
  if (buckets_) {
    engine_.backward([this](const GradientReady& g) {
      float* data = g.data;
      if (g.on_device) {  // through host memory and back (host transports)
        std::vector<float>& copy = host_copies_[g.param];
        copy.resize(static_cast<std::size_t>(g.count));
        copy_to_host(g, copy.data());
        device_gradients_.push_back({g.param, g.data});
        data = copy.data();
      }
      buckets_->add({data, static_cast<std::size_t>(g.count)});
    });
  } else {
    engine_.backward({});
  }
  t.backward_end_ns = now_ns();
  if (buckets_) {
    buckets_->finish();
    for (const auto& [param, device] : device_gradients_) {
      const std::vector<float>& averaged = host_copies_[param];
      copy_to_device(device, averaged.data(), static_cast<std::int64_t>(averaged.size()));
    }
    if (!device_gradients_.empty()) finish_copies_to_device();
    device_gradients_.clear();
    t.buckets = buckets_->take_times();
  }
  t.reduced_ns = now_ns();
  engine_.update(sgd, lr);
  engine_.synchronize();
  t.end_ns = now_ns();
  return t;
}

CostModel fit_cost(std::span<const std::size_t> bytes, std::span<const double> ms) {
  const double n = static_cast<double>(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const double x = static_cast<double>(bytes[i]);
    sx += x;
    sy += ms[i];
    sxx += x * x;
    sxy += x * ms[i];
  }
  const double det = n * sxx - sx * sx;
  if (n == 0) return {};
  if (det <= 0) return {0, sy / sx};  // one size: all of it per byte
  CostModel c{(sxx * sy - sx * sxy) / det, (n * sxy - sx * sy) / det};
  if (c.alpha_ms < 0) c = {0, sxy / sxx};  // through the origin rather than a negative start-up cost
  return c;
}

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
// --check: steps trained both ways, and how far apart (relative) the weights may end: fp32 sums a
// batch's gradients in another order than the reduction does, so they agree closely, not bit for bit.
constexpr int kExactnessSteps = 3;
constexpr double kExactnessTolerance = 1e-5;
}  // namespace

BucketOptions bucket_options(double bucket_mb, double first_bucket_mb) {
  BucketOptions o;
  o.bucket_bytes = static_cast<std::size_t>(bucket_mb * kMiB);
  o.first_bucket_bytes = bucket_mb > 0 ? static_cast<std::size_t>(first_bucket_mb * kMiB) : 0;
  return o;
}

json megabytes(double mb) { return mb == std::floor(mb) ? json(static_cast<std::int64_t>(mb)) : json(mb); }

std::vector<std::size_t> bucket_plan(const Graph& graph, const BucketOptions& options) {
  std::vector<std::size_t> plan;
  std::size_t open = 0;
  for (std::size_t elements : gradient_sizes(graph)) {
    open += 4 * elements;
    if (options.full(plan.size(), open)) plan.push_back(std::exchange(open, 0));
  }
  if (open > 0) plan.push_back(open);
  return plan;
}

Prediction predict_step(const Graph& graph, const Timeline& compute, double other_ms, const BucketOptions& options,
                        const BucketCost& cost) {
  Prediction p;
  double now = compute.forward_ms(), comm_free = 0;
  std::size_t open = 0;
  auto seal = [&] {
    const double start = std::max(now, comm_free);
    comm_free = start + cost(open);
    p.buckets.push_back({open, now, start, comm_free});
    p.comm_ms += comm_free - start;
    open = 0;
  };
  for (auto node = compute.nodes.rbegin(); node != compute.nodes.rend(); ++node) {
    now += node->backward_ms;
    for (int param : graph.node(node->node).params) {
      open += 4 * static_cast<std::size_t>(graph.params()[static_cast<std::size_t>(param)].size());
      if (options.full(p.buckets.size(), open)) seal();
    }
  }
  if (open > 0) seal();
  p.backward_end_ms = now;
  p.exposed_ms = std::max(0.0, comm_free - now);
  p.compute_ms = now + compute.update_ms + other_ms;
  p.step_ms = now + p.exposed_ms + compute.update_ms + other_ms;
  for (std::size_t i = 0; i < p.buckets.size() && p.first_waited_bucket == 0; ++i)
    if (p.buckets[i].end_ms > now) p.first_waited_bucket = i + 1;
  return p;
}

namespace {

struct ScalingConfig {
  TrainConfig train;
  BucketOptions buckets;
  double bucket_mb = 25, first_bucket_mb = 1;
  std::string lr_scaling = "linear";
  double lr = 0.1;  // for 256 images in total, scaled to the global batch (Goyal et al.)
  int lr_warmup_steps = 5;
  bool predict = true;
  int trace_steps = 3;  // of each rank, as Chrome trace events beside the results (0: none)
  // cpu engine: oneDNN threads per rank, the same at every world size (torchrun's default of 1:
  // ranks sharing a host's cores with more threads than cores stall in OpenMP's barriers).
  int threads = 1;
  int baseline_ranks = 1;  // ranks that each train alone in turn for the one-rank point
  bool check = false;      // data parallelism checked exact at each world size (check_exactness)
};

}  // namespace

const OptionTable& data_parallel_options() {
  static const OptionTable table = [] {
    const ScalingConfig d;
    return OptionTable({
        {.key = "world_sizes", .flag = "--world-sizes", .type = OptionType::integer_list,
         .rules = {{"minimum", 1}, {"maximum", kMaxRanks}},
         .help = "data-parallel training at each of these rank counts, e.g. 1,2,4; a plan's default: 1, 2, 4 … and "
                 "every rank"},
        {.key = "sync", .flag = "--sync", .type = OptionType::text, .rules = {{"enum", {"ring", "ps", "rd"}}},
         .fallback = collectives::to_string(d.buckets.algorithm),
         .help = "data parallel: how buckets are averaged: ring | ps (parameter server) | rd", .metavar = "NAME"},
        {.key = "bucket_mb", .flag = "--bucket-mb", .type = OptionType::number,
         .rules = {{"minimum", 0}, {"maximum", 4096}}, .fallback = d.bucket_mb,
         .help = "data parallel: bucket size after the first one; 0: one reduction after backward, no overlap",
         .metavar = "MB"},
        {.key = "first_bucket_mb", .flag = "--first-bucket-mb", .type = OptionType::number,
         .rules = {{"exclusiveMinimum", 0}, {"maximum", 4096}}, .fallback = d.first_bucket_mb,
         .help = "data parallel: the first bucket's size (DDP's)", .metavar = "MB"},
        {.key = "servers", .flag = "--servers", .rules = {{"minimum", 1}}, .fallback = d.buckets.collective.servers,
         .help = "data parallel, ps: parameter-server ranks"},
        {.key = "threads", .flag = "--threads", .rules = {{"minimum", 1}, {"maximum", 1024}}, .fallback = d.threads,
         .help = "data parallel, cpu engine: oneDNN threads per rank"},
        {.key = "lr", .type = OptionType::number, .rules = {{"exclusiveMinimum", 0}}, .fallback = d.lr,
         .help = "learning rate for 256 images in total, scaled to the global batch"},
        {.key = "lr_scaling", .type = OptionType::text, .rules = {{"enum", {"linear", "sqrt", "none"}}},
         .fallback = d.lr_scaling, .help = "how the learning rate follows the global batch"},
        {.key = "lr_warmup_steps", .rules = {{"minimum", 0}}, .fallback = d.lr_warmup_steps,
         .help = "steps of linear learning-rate warm-up"},
        {.key = "predict", .type = OptionType::boolean, .fallback = d.predict,
         .help = "predict each step time from the one-rank timeline and the fitted bucket cost"},
        {.key = "baseline_ranks", .flag = "--baseline-ranks", .rules = {{"minimum", 1}, {"maximum", 1024}},
         .fallback = d.baseline_ranks,
         .help = "ranks that each train alone, in turn, for the one-rank point (the speedup's base): one process's "
                 "speed varies with where its memory lands, so the median of several is the point and their range shows it"},
        {.key = "check", .flag = "--check", .type = OptionType::boolean, .fallback = d.check,
         .help = "data parallel: after each world size's steps, check that k ranks of batch b train exactly as one rank "
                 "of k·b (a model without batch norm or dropout: cnn_cifar; fp32; cpu or gpu engine)"},
        {.key = "trace_steps", .rules = {{"minimum", 0}, {"maximum", 1000}}, .fallback = d.trace_steps,
         .help = "last steps of each rank written as Chrome trace events beside the results (0: none)"},
    });
  }();
  return table;
}

namespace {

// models.scaling's options: the training options, the data-parallel ones and the transport's.
const OptionTable& scaling_options() {
  static const OptionTable table = [] {
    std::vector<OptionSpec> more = data_parallel_options().specs();
    const auto& transport = collectives::transport_options().specs();
    more.insert(more.end(), transport.begin(), transport.end());
    return training_table(more);
  }();
  return table;
}

ScalingConfig scaling_config_from(const json& p) {
  const OptionTable& o = scaling_options();
  ScalingConfig c;
  c.train = training_config_from(p);
  c.bucket_mb = o.get<double>(p, "bucket_mb");
  c.first_bucket_mb = o.get<double>(p, "first_bucket_mb");
  c.buckets = bucket_options(c.bucket_mb, c.first_bucket_mb);
  c.buckets.algorithm = collectives::parse_algorithm(o.get<std::string>(p, "sync"));
  c.buckets.collective.servers = o.get<int>(p, "servers");
  c.lr = o.get<double>(p, "lr");
  c.lr_scaling = o.get<std::string>(p, "lr_scaling");
  c.lr_warmup_steps = o.get<int>(p, "lr_warmup_steps");
  c.predict = o.get<bool>(p, "predict");
  c.trace_steps = o.get<int>(p, "trace_steps");
  c.threads = o.get<int>(p, "threads");
  c.baseline_ranks = o.get<int>(p, "baseline_ranks");
  c.check = o.get<bool>(p, "check");
  validate(c.train);
  if (c.check && c.train.engine == "replay")
    throw InputError("field 'check' (--check): the replay engine computes no weights to compare; use --engine cpu or gpu");
  if (c.check && c.train.precision != "fp32")
    throw InputError(fmt::format("field 'check' (--check): weights are compared to {} in fp32; --precision is {}",
                                 kExactnessTolerance, c.train.precision));
  return c;
}

// The learning rate of step `step` at `ranks` ranks: the base rate for 256 images scaled to the
// global batch, linearly or by its square root, after a linear warm-up.
double learning_rate(const ScalingConfig& c, int ranks, int step) {
  const double global = static_cast<double>(c.train.batch) * ranks / 256.0;
  const double scaled = c.lr * (c.lr_scaling == "linear" ? global : c.lr_scaling == "sqrt" ? std::sqrt(global) : 1.0);
  return ExponentialDecay{scaled, static_cast<double>(c.lr_warmup_steps), 1.0, 1.0}.at(step + 1);
}

// Times one bucket's reduction at each size the plan sends (and a quarter of the largest, so that
// two sizes pin the line), max over the ranks, median of `iters`.
CostModel measure_cost(transport::Transport& t, const std::vector<std::size_t>& plan, const BucketOptions& options,
                       std::chrono::milliseconds wait, int iters) {
  std::vector<std::size_t> sizes = plan;
  sizes.push_back(std::max<std::size_t>(4, *std::max_element(plan.begin(), plan.end()) / 4 / 4 * 4));
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<std::size_t> xs;
  std::vector<double> ys;
  std::vector<float> data;
  HostBuffer packed;
  for (std::size_t bytes : sizes) {
    data.assign(bytes / 4, 1.f);
    const std::span<float> whole(data);
    std::vector<double> ms;
    for (int i = -1; i < iters; ++i) {
      const std::int64_t t0 = now_ns();
      collectives::reduce_bucket(t, std::span(&whole, 1), packed, options, Deadline(wait));
      if (i >= 0) ms.push_back(static_cast<double>(now_ns() - t0) / 1e6);
    }
    collectives::allreduce(t, collectives::Algorithm::rd, ms.data(), ms.size(), collectives::DataType::float64,
                           collectives::ReduceOp::max, {}, Deadline(wait));
    xs.push_back(bytes);
    ys.push_back(summarize(ms).median);
  }
  return fit_cost(xs, ys);
}

json identity(const ScalingConfig& c, const std::string& transport, int ranks) {
  json id{{"model", c.train.model}, {"engine", c.train.engine}, {"precision", c.train.precision},
          {"batch", c.train.batch}, {"mode", "data_parallel"}, {"sync", to_string(c.buckets.algorithm)},
          {"transport", transport}, {"bucket_mb", megabytes(c.bucket_mb)}, {"first_bucket_mb", megabytes(c.first_bucket_mb)},
          {"lr_scaling", c.lr_scaling}, {"ranks", ranks}};
  if (c.buckets.algorithm == collectives::Algorithm::ps) id["servers"] = c.buckets.collective.servers;
  if (c.train.layout != "blocked") id["layout"] = c.train.layout;
  if (c.train.engine == "replay") id["timeline"] = c.train.timeline;
  if (c.train.engine == "cpu") id["threads"] = c.threads;
  return id;
}

// Chrome trace events (Perfetto, chrome://tracing) of a rank's last `count` timed steps: the step's
// phases on one track, each bucket's wait for the link and its reduction on another. Times are from
// the first of those steps' start on this rank (clocks of different hosts are not aligned).
json trace_events(const Graph& graph, const std::vector<StepTimes>& steps, int rank, const std::string& host, int count) {
  json events = json::array();
  const auto meta = [&](const char* what, int tid, const std::string& name) {
    events.push_back({{"ph", "M"}, {"name", what}, {"pid", rank}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  meta("process_name", 0, fmt::format("rank {} ({})", rank, host));
  meta("thread_name", 0, "compute");
  meta("thread_name", 1, "communication");
  const std::size_t first = steps.size() - std::min<std::size_t>(steps.size(), static_cast<std::size_t>(count));
  if (first == steps.size()) return events;
  const std::int64_t origin = steps[first].start_ns;
  const auto span = [&](int tid, const std::string& name, std::int64_t from, std::int64_t to, json args = json::object()) {
    if (to <= from) return;
    events.push_back({{"ph", "X"}, {"name", name}, {"pid", rank}, {"tid", tid}, {"ts", static_cast<double>(from - origin) / 1e3},
                      {"dur", static_cast<double>(to - from) / 1e3}, {"args", args}});
  };
  // A layer's span has its measured length; the layers of a phase are laid end to end from the
  // phase's start (the engine times each node, not when it began), so any gap between them shows last.
  const auto layer_spans = [&](std::size_t step, const std::vector<LayerTime>& nodes, bool forward, std::int64_t from) {
    const auto one = [&](const LayerTime& n) {
      const double ms = forward ? n.forward_ms : n.backward_ms;
      const auto to = from + static_cast<std::int64_t>(ms * 1e6);
      span(0, fmt::format("{} {}", to_string(graph.node(n.node).op), n.node), from, to,
           {{"step", step}, {"node", n.node}, {"pass", forward ? "forward" : "backward"}, {"ms", ms}});
      from = to;
    };
    if (forward) std::for_each(nodes.begin(), nodes.end(), one);
    else std::for_each(nodes.rbegin(), nodes.rend(), one);  // (clang 14, the sanitized build, lacks libstdc++ 12's views)
  };
  for (std::size_t i = first; i < steps.size(); ++i) {
    const StepTimes& t = steps[i];
    span(0, "forward", t.start_ns, t.forward_end_ns, {{"step", i}});
    layer_spans(i, t.layers.nodes, true, t.start_ns);
    span(0, "backward", t.forward_end_ns, t.backward_end_ns, {{"step", i}});
    layer_spans(i, t.layers.nodes, false, t.forward_end_ns);
    span(0, "wait for gradients", t.backward_end_ns, t.reduced_ns, {{"step", i}});
    span(0, "update", t.reduced_ns, t.end_ns, {{"step", i}});
    for (std::size_t b = 0; b < t.buckets.size(); ++b) {
      const auto& bt = t.buckets[b];
      const json args{{"step", i}, {"bucket", b}, {"bytes", bt.bytes}};
      span(1, fmt::format("bucket {} queued", b), bt.sealed_ns, bt.start_ns, args);
      span(1, fmt::format("bucket {} allreduce {:.1f} MiB", b, static_cast<double>(bt.bytes) / kMiB), bt.start_ns, bt.end_ns, args);
    }
  }
  return events;
}

// Each of the k ranks' `mine` through the rendezvous, in rank order, at rank 0 (empty elsewhere).
std::vector<json> gather_at_rank0(StepContext& ctx, const std::string& what, int k, const json& mine) {
  const std::string key = fmt::format("{}/{}/{}/", ctx.scope, what, k);
  ctx.rendezvous->set(key + std::to_string(ctx.rank), mine.dump());
  std::vector<json> all;
  for (int r = 0; ctx.rank == 0 && r < k; ++r) all.push_back(json::parse(ctx.rendezvous->get(key + std::to_string(r), ctx.deadline)));
  return all;
}

// Every rank's trace events through the rendezvous; rank 0 writes them as one file beside the
// results and returns its name (empty when it has no results folder).
std::string gather_trace(StepContext& ctx, int k, const json& mine) {
  const std::vector<json> ranks = gather_at_rank0(ctx, "trace", k, mine);
  if (ctx.rank != 0 || ctx.results_dir.empty()) return "";
  json all = {{"traceEvents", json::array()}, {"displayTimeUnit", "ms"}};
  for (const json& events : ranks)
    for (const auto& e : events) all["traceEvents"].push_back(e);
  const std::string name = fmt::format("trace-{}-{}ranks.json", ctx.scope, k);
  write_file_atomically(std::filesystem::path(ctx.results_dir) / name, all.dump() + "\n");
  return name;
}

// What the sweep keeps from one world size to the next (rank 0).
struct SweepState {
  std::optional<double> single_images_per_s;
  std::optional<Timeline> single_timeline;  // measured at one rank (cpu, gpu) or replayed
  double single_other_ms = 0;
};

// A rank's engine, fed its own batch: the same model, data seeded by rank. Throws Unavailable.
std::unique_ptr<Engine> rank_engine(const StepContext& ctx, const ScalingConfig& c, const Graph& graph, int rank) {
  std::unique_ptr<Engine> engine =
      make_engine(c.train.engine, graph,
                  {.batch = c.train.batch, .precision = parse_precision(c.train.precision), .seed = c.train.seed,
                   .plain_layout = c.train.layout == "plain", .profile = c.train.engine != "replay",
                   .device = ctx.local_rank, .timeline = c.train.timeline});
  const SyntheticBatch b = synthetic_batch(graph, c.train.batch, static_cast<std::uint32_t>(c.train.seed + 7919u * rank));
  engine->set_batch(b.images, b.labels);
  return engine;
}

// One rank's steps at k ranks (t null: alone) after the warm-up; `layers_before` gets the engine's
// layer times when timing began.
std::vector<StepTimes> train_steps(Engine& engine, transport::Transport* t, int k, const StepContext& ctx,
                                   const ScalingConfig& c, const Graph& graph, std::vector<LayerTime>& layers_before) {
  DataParallel dp(engine, t, c.buckets, ctx.deadline);
  const SgdOptions sgd;
  std::vector<StepTimes> steps;
  const int total_steps = c.train.warmup + c.train.iters;
  for (int i = 0; i < total_steps; ++i) {
    if (i == c.train.warmup) layers_before = engine.layer_times();
    const bool traced = i >= std::max(c.train.warmup, total_steps - c.trace_steps);
    const std::vector<LayerTime> before = traced ? engine.layer_times() : std::vector<LayerTime>{};
    StepTimes s = dp.step(sgd, learning_rate(c, k, i));
    if (traced) s.layers = timeline_between(graph, before, engine.layer_times(), 1);
    if (i >= c.train.warmup) steps.push_back(std::move(s));
  }
  return steps;
}

// What a rank delivered on its own. The group waits for its slowest rank, so only the time a rank
// spent not waiting on the others (forward, backward, update) tells a slow node apart.
int compute_threads(const ScalingConfig& c) { return c.train.engine == "cpu" ? c.threads : 1; }

// `threads`: the CPUs the rank keeps busy computing (the cpu engine's oneDNN threads, else one).
json rank_summary(const StepContext& ctx, int rank, int batch, int threads, const std::vector<StepTimes>& steps) {
  std::vector<double> own_ms, compute_ms;
  for (const auto& st : steps) {
    own_ms.push_back(st.step_ms());
    compute_ms.push_back(st.compute_ms());
  }
  const double compute_p50 = summarize(compute_ms).median;
  const json own = {{"batch", batch}};  // one rank's own images a step: its batch
  json summary = {{"rank", rank}, {"host", ctx.host},
                  {"images_per_s", images_rate().of(own, summarize(own_ms).avg)},
                  {"compute_ms_p50", compute_p50},
                  {"compute_images_per_s", images_rate().of(own, compute_p50)}};
  summary.update(this_machine());
  summary["threads"] = threads;
  return summary;
}

// The data-parallel exactness check (--check): this rank trains kExactnessSteps steps from the same
// initial weights on its slice of one synthetic batch of k·batch images, averaging gradients over `t`;
// then one engine alone trains the same steps on the whole batch. The weights must agree: the largest
// difference of any parameter, relative to the larger of 1 and that parameter's largest weight.
json check_exactness(const ScalingConfig& c, const Graph& graph, transport::Transport& t, const StepContext& ctx) {
  const int k = t.world(), b = c.train.batch;
  const SyntheticBatch all = synthetic_batch(graph, k * b, static_cast<std::uint32_t>(c.train.seed + 104729u));
  const std::size_t image = static_cast<std::size_t>(graph.input_shape().size());
  auto train = [&](int batch, int slice, transport::Transport* over) {
    std::unique_ptr<Engine> e = make_engine(c.train.engine, graph,
                                            {.batch = batch, .seed = c.train.seed, .plain_layout = c.train.layout == "plain",
                                             .device = ctx.local_rank});
    const std::size_t from = static_cast<std::size_t>(slice * batch);
    e->set_batch(std::span(all.images).subspan(from * image, static_cast<std::size_t>(batch) * image),
                 std::span(all.labels).subspan(from, static_cast<std::size_t>(batch)));
    DataParallel dp(*e, over, over ? c.buckets : collectives::BucketOptions{}, ctx.deadline);
    for (int i = 0; i < kExactnessSteps; ++i) dp.step({}, learning_rate(c, k, i));  // k·b images a step either way
    return e;
  };
  const auto mine = train(b, t.rank(), &t);
  const auto whole = train(k * b, 0, nullptr);
  double worst = 0;
  int worst_param = 0;
  for (int i = 0; i < static_cast<int>(graph.params().size()); ++i) {
    const std::vector<float> got = mine->parameter(i), want = whole->parameter(i);
    double diff = 0, norm = 1;
    for (std::size_t j = 0; j < want.size(); ++j) {
      diff = std::max(diff, static_cast<double>(std::abs(got[j] - want[j])));
      norm = std::max(norm, static_cast<double>(std::abs(want[j])));
    }
    if (diff / norm > worst) std::tie(worst, worst_param) = std::pair(diff / norm, i);
  }
  return {{"rank", t.rank()}, {"host", ctx.host}, {"rel_diff", worst}, {"parameter", worst_param}};
}

// What the check says of one world size, from every rank's check_exactness: its metric, and why it
// failed where it did (the worst rank, by rank and host, and what makes a model inexact).
void judge_exactness(ResultRecord& r, const std::vector<json>& ranks, const Graph& graph, int batch) {
  const auto worst = std::max_element(ranks.begin(), ranks.end(), [](const json& a, const json& b) {
    return a.value("rel_diff", 0.0) < b.value("rel_diff", 0.0);
  });
  const double diff = worst->value("rel_diff", 0.0);
  r.metrics["weights_rel_diff_max"] = diff;
  if (diff <= kExactnessTolerance) return;
  const bool per_rank_statistics = std::any_of(graph.nodes().begin(), graph.nodes().end(), [](const Node& n) {
    return n.op == Op::batch_norm || n.op == Op::dropout;
  });
  r.status = Status::fail;
  r.reason = fmt::format("rank {} on host {}: after {} steps its weights differ from one rank's trained on the whole batch of "
                         "{} images by {:.3g} (parameter {}, relative), above {}{}",
                         worst->value("rank", -1), worst->value("host", "?"), kExactnessSteps,
                         batch * static_cast<int>(ranks.size()), diff, worst->value("parameter", -1), kExactnessTolerance,
                         per_rank_statistics ? fmt::format(": {} has batch norm or dropout, whose statistics and masks are each "
                                                           "rank's own (as DDP without SyncBatchNorm); check with --model cnn_cifar",
                                                           graph.name())
                                             : ": the gradients were not averaged exactly");
}

// One point of the sweep as rank 0 records it.
struct Point {
  int k = 1;
  std::string transport = {};
  std::vector<double> step_ms = {};  // every timed step: the slowest rank's (together) or each rank's (alone in turn)
  // Alone in turn on several ranks: each process's mean step, so batch over it is that process's
  // images/s, slow steps included. The process is then the sample: its steps vary less than processes
  // do (one lands on slow memory now and then), so they would show a spread that two runs do not keep.
  std::vector<double> process_ms = {};
  std::vector<StepTimes> steps = {};  // rank 0's
  std::vector<LayerTime> layers_before = {};
  const Engine* engine = nullptr;  // rank 0's
  std::vector<json> per_rank = {};
  std::optional<CostModel> cost = {};
  std::string trace = {};
  std::vector<json> exactness = {};  // every rank's check_exactness, with --check
  // Each timed step's slowest compute over the ranks (a rank's step less its exposed wait), what the
  // others waited for; that rank's exposed time, the communication no rank's compute hid; and its
  // hand-offs between threads (StepTimes::handoff_ms).
  std::vector<double> slowest_compute_ms = {}, slowest_exposed_ms = {}, slowest_handoff_ms = {};
};

// At k > 1 ranks: the step's slowest compute (slowest_compute_ms, the median step's), that rank's
// exposed communication (slowest_exposed_comm_ms) and hand-offs between threads (slowest_handoff_ms),
// and the rank that was slowest most often (samples.slowest_rank: rank, host, in how many steps of
// how many).
json slowest_rank(ResultRecord& r, const Point& p) {
  if (p.k < 2 || p.slowest_compute_ms.empty()) return json();
  r.metrics["slowest_compute_ms"] = summarize(p.slowest_compute_ms).median;
  r.metrics["slowest_exposed_comm_ms"] = summarize(p.slowest_exposed_ms).median;
  r.metrics["slowest_handoff_ms"] = summarize(p.slowest_handoff_ms).median;
  const auto most = std::max_element(p.per_rank.begin(), p.per_rank.end(), [](const json& a, const json& b) {
    return a.value("slowest_in_steps", 0) < b.value("slowest_in_steps", 0);
  });
  if (most == p.per_rank.end()) return json();
  return {{"rank", most->value("rank", -1)}, {"host", most->value("host", "?")}, {"steps", most->value("slowest_in_steps", 0)},
          {"of", p.slowest_compute_ms.size()}};
}

void record_point(StepContext& ctx, const ScalingConfig& c, const Graph& graph, const Point& p, SweepState& state) {
  const int k = p.k;
  const auto& steps = p.steps;
  ResultRecord r;
  r.params = identity(c, p.transport, k);
  StepContext rc = ctx;
  rc.world = k;
  const Summary s = summarize(p.process_ms.empty() ? p.step_ms : p.process_ms);
  const double total_ms = std::accumulate(p.step_ms.begin(), p.step_ms.end(), 0.0);
  auto median_of = [&](auto part) {
    std::vector<double> v;
    for (const auto& st : steps) v.push_back(part(st));
    return summarize(v).median;
  };
  // Together: every image over the time the steps took (their mean step). Alone in turn: the median
  // process's images/s, so that the point is one of its samples (as batch over their step) and a slow
  // process moves it no more than a fast one does. Images a step as models/shape.json declares them.
  const double images_per_s =
      images_rate().of(r.params, p.process_ms.empty() ? total_ms / static_cast<double>(p.step_ms.size()) : s.median);
  const double comm = median_of([](const StepTimes& st) { return st.comm_ms(); });
  const double exposed = median_of([](const StepTimes& st) { return st.exposed_ms(); });
  r.metrics = {{"images_per_s", images_per_s},
               {"images_per_s_per_rank", images_per_s / k},
               {"step_time_ms_p50", s.median},
               {"forward_ms", median_of([](const StepTimes& st) { return st.forward_ms(); })},
               {"backward_ms", median_of([](const StepTimes& st) { return st.backward_ms(); })},
               {"update_ms", median_of([](const StepTimes& st) { return st.update_ms(); })}};
  if (k > 1) {  // one rank alone reduces nothing
    r.metrics.update({{"comm_ms", comm}, {"exposed_comm_ms", exposed}, {"buckets", steps.back().buckets.size()}});
    if (comm > 0) r.metrics["overlap"] = std::clamp(1.0 - exposed / comm, 0.0, 1.0);
  }
  const json slowest_seen = slowest_rank(r, p);
  auto keep_ranks = [&] {
    r.samples["per_rank"] = p.per_rank;
    if (!slowest_seen.is_null()) r.samples["slowest_rank"] = slowest_seen;
  };

  if (k == 1) {
    state.single_images_per_s = images_per_s;
    if (c.train.engine != "replay")
      state.single_timeline = timeline_between(graph, p.layers_before, p.engine->layer_times(), c.train.iters);
    if (state.single_timeline) {
      const Timeline& tl = *state.single_timeline;  // rank 0's, so its step time is rank 0's too
      state.single_other_ms = std::max(0.0, median_of([](const StepTimes& st) { return st.step_ms(); }) - tl.forward_ms() -
                                                tl.backward_ms() - tl.update_ms);
    }
  }
  if (state.single_images_per_s) {  // over this run's one-rank point, by the rule the report follows too
    const Scaling scaling = scaling_over(images_per_s, k, *state.single_images_per_s, 1);
    r.metrics["speedup"] = scaling.speedup;
    r.metrics["efficiency"] = scaling.efficiency;
  }
  std::string predicted;
  if (p.cost && state.single_timeline) {
    const Prediction pr = predict_step(graph, *state.single_timeline, state.single_other_ms, c.buckets, *p.cost);
    r.metrics["predicted_step_ms"] = pr.step_ms;
    r.metrics["predicted_images_per_s"] = images_rate().of(r.params, pr.step_ms);
    r.metrics["predicted_exposed_comm_ms"] = pr.exposed_ms;
    const Timeline& tl = *state.single_timeline;
    r.metrics["predicted_compute_ms"] = tl.forward_ms() + tl.backward_ms() + tl.update_ms;
    r.metrics["prediction_error_pct"] = 100 * (s.median / pr.step_ms - 1);
    r.metrics["alpha_ms"] = p.cost->alpha_ms;
    r.metrics["beta_ms_per_MiB"] = p.cost->beta_ms_per_byte * kMiB;
    if (r.metrics.contains("slowest_compute_ms")) {
      // The same predictor on the compute as measured: one rank's timeline at the slowest rank's speed.
      const double factor = r.metrics["slowest_compute_ms"].get<double>() / pr.compute_ms;
      r.metrics["predicted_exposed_comm_at_slowest_compute_ms"] =
          predict_step(graph, scaled(tl, factor), state.single_other_ms * factor, c.buckets, *p.cost).exposed_ms;
    }
    keep_ranks();
    predicted = fmt::format(", predicted {:.1f} ms ({:+.1f}%{})", pr.step_ms, r.metrics["prediction_error_pct"].get<double>(),
                            explain_prediction(r));
  }
  const json explained = r.samples.value("prediction", json());
  r.samples = to_json(s);
  if (!explained.is_null()) r.samples["prediction"] = explained;
  if (!p.process_ms.empty()) r.samples["values"] = p.process_ms;
  // One step's buckets as rank 0 saw them (the median step), from the step's start.
  const auto& median_step = steps[steps.size() / 2];
  json buckets = json::array();
  for (const auto& bt : median_step.buckets)
    buckets.push_back({{"bytes", bt.bytes},
                       {"sealed_ms", static_cast<double>(bt.sealed_ns - median_step.start_ns) / 1e6},
                       {"start_ms", static_cast<double>(bt.start_ns - median_step.start_ns) / 1e6},
                       {"end_ms", static_cast<double>(bt.end_ns - median_step.start_ns) / 1e6}});
  r.samples["buckets"] = buckets;
  r.samples["backward_end_ms"] = static_cast<double>(median_step.backward_end_ns - median_step.start_ns) / 1e6;
  // Where scaling is lost: the first bucket still being reduced when backward ended (1-based); the
  // update waits for it and every bucket after it.
  for (std::size_t i = 0; i < median_step.buckets.size(); ++i) {
    if (median_step.buckets[i].end_ns > median_step.backward_end_ns) {
      r.metrics["first_waited_bucket"] = i + 1;
      break;
    }
  }
  keep_ranks();
  if (!p.exactness.empty()) judge_exactness(r, p.exactness, graph, c.train.batch);
  if (c.train.engine == "replay") r.samples["timeline_source"] = state.single_timeline->source;
  if (!p.trace.empty()) r.samples["trace"] = p.trace;
  rc.record(r);
  const std::string who = slowest_rank_words(r.samples.value("slowest_rank", json()));
  const std::string slowest_words =
      who.empty() ? "" : fmt::format("; the slowest rank's compute {:.1f} ms ({})", r.metrics["slowest_compute_ms"].get<double>(), who);
  std::string alone;
  if (!p.process_ms.empty()) {
    const auto [fastest, slowest] = std::minmax_element(p.process_ms.begin(), p.process_ms.end());
    alone = fmt::format(" (each of {} ranks alone in turn: {:.1f} to {:.1f} images/s)", p.process_ms.size(),
                        images_rate().of(r.params, *slowest), images_rate().of(r.params, *fastest));
  }
  std::cout << fmt::format("# {} {} {} x{}: {:.1f} images/s{}{}, step {:.1f} ms p50{}{}\n", c.train.model, c.train.engine,
                           to_string(c.buckets.algorithm), k, images_per_s,
                           alone,
                           r.metrics.contains("speedup") ? fmt::format(" ({:.2f}x one rank)", r.metrics["speedup"].get<double>()) : "",
                           s.median, predicted,
                           k > 1 ? fmt::format(", communication {:.1f} ms in {} buckets, {:.1f} of it exposed{}", comm,
                                               steps.back().buckets.size(), exposed, predicted.empty() ? slowest_words : "")
                                 : "")
            << std::flush;
  if (r.metrics.contains("weights_rel_diff_max")) {
    std::cout << (r.status == Status::fail
                      ? fmt::format("#   check FAILED: {}\n", r.reason)
                      : fmt::format("#   check: the {} ranks' weights match one rank's trained on the whole batch (largest "
                                    "difference {:.2g}, relative)\n",
                                    k, r.metrics["weights_rel_diff_max"].get<double>()))
              << std::flush;
  }
}

}  // namespace

std::string ranks_sharing_cpus(const json& per_rank) {
  struct Machine {
    std::vector<std::string> hosts;  // of its ranks
    std::int64_t threads = 0, cpus = 0;
  };
  std::map<std::string, Machine> machines;
  std::vector<std::string> order;
  for (const json& r : per_rank) {
    if (!r.is_object() || !r.contains("machine") || !r.contains("cpus")) continue;  // a record from before they were kept
    const std::string id = r["machine"];
    if (!machines.count(id)) order.push_back(id);
    Machine& m = machines[id];
    m.hosts.push_back(r.value("host", "?"));
    m.threads += r.value("threads", 1);
    m.cpus = r["cpus"].get<std::int64_t>();
  }
  for (const std::string& id : order) {
    const Machine& m = machines[id];
    const std::int64_t ranks = static_cast<std::int64_t>(m.hosts.size());
    if (m.threads > m.cpus)
      return fmt::format("{} ranks{} on {} CPU{} of one machine ({})", ranks,
                         m.threads > ranks ? fmt::format(" ({} threads)", m.threads) : "", m.cpus, m.cpus == 1 ? "" : "s",
                         fmt::join(m.hosts, ", "));
  }
  return "";
}

std::string slowest_rank_words(const json& slowest) {
  if (!slowest.is_object()) return "";
  return fmt::format("rank {} on host {}, the slowest in {} of {} steps", slowest.value("rank", -1), slowest.value("host", "?"),
                     slowest.value("steps", 0), slowest.value("of", 0));
}

std::string explain_prediction(ResultRecord& r) {
  json& m = r.metrics;
  const double measured_compute = m.value("forward_ms", 0.0) + m.value("backward_ms", 0.0) + m.value("update_ms", 0.0);
  const double predicted_compute = m.at("predicted_compute_ms");
  const double measured_exposed = m.value("exposed_comm_ms", 0.0), predicted_exposed = m.at("predicted_exposed_comm_ms");
  const double step_error = m.at("step_time_ms_p50").get<double>() - m.at("predicted_step_ms").get<double>();
  m["compute_error_ms"] = measured_compute - predicted_compute;
  m["compute_error_pct"] = 100 * (measured_compute / predicted_compute - 1);
  m["exposed_comm_error_ms"] = measured_exposed - predicted_exposed;
  // What neither part holds: the step's time outside forward, backward, update and waiting.
  m["other_error_ms"] = step_error - m["compute_error_ms"].get<double>() - m["exposed_comm_error_ms"].get<double>();
  const std::string shared = ranks_sharing_cpus(r.samples.value("per_rank", json::array()));
  json& why = r.samples["prediction"];
  why = {{"comparable", shared.empty()},
         {"compute", {{"measured_ms", measured_compute}, {"predicted_ms", predicted_compute}}},
         {"exposed_communication", {{"measured_ms", measured_exposed}, {"predicted_ms", predicted_exposed}}}};
  // The communication part with the compute as measured: the slowest rank's exposed time (nobody's
  // compute hid it) against the predictor's on one rank's timeline played at that rank's speed.
  std::string at_slowest;
  if (m.contains("predicted_exposed_comm_at_slowest_compute_ms")) {
    const double slowest = m.at("slowest_compute_ms"), predicted = m.at("predicted_exposed_comm_at_slowest_compute_ms");
    const double measured = m.at("slowest_exposed_comm_ms");
    m["exposed_comm_error_at_slowest_compute_ms"] = measured - predicted;
    const double handoff = m.value("slowest_handoff_ms", 0.0);  // in the measured, never in the predicted
    why["at_slowest_compute"] = {{"compute_ms", slowest},
                                 {"exposed_communication", {{"measured_ms", measured}, {"predicted_ms", predicted}}},
                                 {"handoff_ms", handoff}};
    const std::string who = slowest_rank_words(r.samples.value("slowest_rank", json()));
    at_slowest = fmt::format("; at the slowest rank's compute ({:.1f} ms{}), exposed communication {:+.1f} ms, {:.1f} ms of it "
                             "hand-offs between its threads",
                             slowest, who.empty() ? "" : ": " + who, measured - predicted, handoff);
  }
  if (!shared.empty())
    why["reason"] = fmt::format("{}: compute measured with the CPUs shared against a timeline of one rank alone; "
                                "judge the communication part only, or rerun with a CPU per rank",
                                shared);
  return fmt::format(": compute {:+.1f} ms ({:+.1f}%), exposed communication {:+.1f} ms{}{}", m["compute_error_ms"].get<double>(),
                     m["compute_error_pct"].get<double>(), m["exposed_comm_error_ms"].get<double>(), at_slowest,
                     shared.empty() ? "" : "; not comparable: " + shared);
}

namespace {

void record_skip(StepContext& ctx, const ScalingConfig& c, const std::string& transport, int k, const std::string& reason) {
  ResultRecord r;
  r.params = identity(c, transport, k);
  r.status = Status::skip;
  r.reason = reason;
  StepContext rc = ctx;
  rc.world = k;
  rc.record(r);
}

// Each step as long as its slowest rank, and the slowest rank's compute, exposed time and hand-offs:
// the ranks' largest, by allreduce (no clocks compared). Returns in how many steps this rank was it.
int find_slowest(transport::Transport& t, const StepContext& ctx, Point& p) {
  const std::size_t n = p.steps.size();
  const auto split = [n](const std::vector<double>& both, std::vector<double>& first, std::vector<double>& second) {
    first.assign(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(n));
    second.assign(both.begin() + static_cast<std::ptrdiff_t>(n), both.end());
  };
  auto largest = [&](std::vector<double> v) {
    collectives::allreduce(t, collectives::Algorithm::rd, v.data(), v.size(), collectives::DataType::float64,
                           collectives::ReduceOp::max, {}, Deadline(ctx.deadline));  // each wait its own deadline
    return v;
  };
  std::vector<double> mine(2 * n, 0.0);  // each step's time and compute
  for (std::size_t i = 0; i < n; ++i) std::tie(mine[i], mine[n + i]) = std::pair(p.steps[i].step_ms(), p.steps[i].compute_ms());
  split(largest(mine), p.step_ms, p.slowest_compute_ms);
  int slowest_in = 0;
  std::vector<double> where_slowest(2 * n, 0.0);  // each step's exposed and hand-off times, where this rank was slowest
  for (std::size_t i = 0; i < n; ++i) {
    if (p.steps[i].compute_ms() < p.slowest_compute_ms[i]) continue;
    ++slowest_in;
    std::tie(where_slowest[i], where_slowest[n + i]) = std::pair(p.steps[i].exposed_ms(), p.steps[i].handoff_ms());
  }
  split(largest(where_slowest), p.slowest_exposed_ms, p.slowest_handoff_ms);
  return slowest_in;
}

// k > 1 ranks together (one rank is measured alone, measure_alone_in_turn).
void measure_world_size(StepContext& ctx, transport::Transport& t, const ScalingConfig& c, const Graph& graph, SweepState& state) {
  const int k = t.world();
  std::unique_ptr<Engine> engine;
  try {
    engine = rank_engine(ctx, c, graph, t.rank());
  } catch (const Unavailable& e) {
    if (t.rank() == 0) record_skip(ctx, c, t.name(), k, e.what());
    return;
  }
  Point p{.k = k, .transport = t.name()};
  if (c.predict) p.cost = measure_cost(t, bucket_plan(graph, c.buckets), c.buckets, ctx.deadline, 5);
  p.steps = train_steps(*engine, &t, k, ctx, c, graph, p.layers_before);
  const int slowest_in = find_slowest(t, ctx, p);
  if (c.trace_steps > 0) p.trace = gather_trace(ctx, k, trace_events(graph, p.steps, t.rank(), ctx.host, c.trace_steps));
  json mine = rank_summary(ctx, t.rank(), c.train.batch, compute_threads(c), p.steps);
  mine["slowest_in_steps"] = slowest_in;
  p.per_rank = gather_at_rank0(ctx, "per_rank", k, mine);
  if (c.check) p.exactness = gather_at_rank0(ctx, "exactness", k, check_exactness(c, graph, t, ctx));
  if (t.rank() != 0) return;
  p.engine = engine.get();
  record_point(ctx, c, graph, p, state);
}

// The one-rank point on each of the first `baseline_ranks` ranks in turn, the others waiting: one
// process's speed depends on where its memory landed, so the speedup's base pools several processes
// and its samples show how far they differ.
void measure_alone_in_turn(StepContext& ctx, const ScalingConfig& c, const Graph& graph, SweepState& state) {
  const int turns = c.baseline_ranks;
  if (turns > ctx.world)
    throw InputError(fmt::format("field 'baseline_ranks': {} ranks asked for, but the run has {}", turns, ctx.world));
  const std::string transport = collectives::transport_options().get<std::string>(ctx.params, "transport");
  std::unique_ptr<Engine> engine;
  Point p{.k = 1, .transport = transport};
  json mine;
  for (int turn = 0; turn < turns; ++turn) {
    if (ctx.rank == turn) {
      try {
        engine = rank_engine(ctx, c, graph, ctx.rank);
        p.steps = train_steps(*engine, nullptr, 1, ctx, c, graph, p.layers_before);
        mine = rank_summary(ctx, ctx.rank, c.train.batch, compute_threads(c), p.steps);
        for (const auto& s : p.steps) mine["step_ms"].push_back(s.step_ms());
      } catch (const Unavailable& e) {
        mine = {{"rank", ctx.rank}, {"host", ctx.host}, {"skip", e.what()}};
      }
    }
    ctx.rendezvous->barrier(fmt::format("{}/alone/{}", ctx.scope, turn), ctx.deadline);
  }
  if (ctx.rank >= turns) return;
  const std::vector<json> ranks = gather_at_rank0(ctx, "alone", turns, mine);
  if (ctx.rank != 0) return;
  if (p.steps.empty()) {  // rank 0 could not train: its reason is the point's
    record_skip(ctx, c, transport, 1, mine["skip"].get<std::string>());
    return;
  }
  for (json r : ranks) {
    if (r.contains("step_ms")) {
      const std::vector<double> ms = r["step_ms"];
      p.step_ms.insert(p.step_ms.end(), ms.begin(), ms.end());
      if (turns > 1) p.process_ms.push_back(summarize(ms).avg);
    }
    r.erase("step_ms");
    p.per_rank.push_back(std::move(r));
  }
  p.engine = engine.get();
  record_point(ctx, c, graph, p, state);
}

void run_scaling(StepContext& ctx) {
  const ScalingConfig c = scaling_config_from(ctx.params);
  const Graph graph = build_model(c.train.model);
  // By default the speedup curve's usual points: 1, 2, 4 … and every rank of the run.
  std::vector<int> doubling;
  for (int k = 1; k < ctx.world; k *= 2) doubling.push_back(k);
  doubling.push_back(ctx.world);
  if (c.train.engine == "cpu") omp_set_num_threads(c.threads);
  SweepState state;
  // The replay's timeline is its prediction's too; read here, a bad one stops the step before any mesh.
  if (c.train.engine == "replay") state.single_timeline = load_timeline(c.train.timeline, graph);
  std::vector<int> sizes = collectives::step_world_sizes(ctx, doubling);
  // One rank reduces nothing: measured alone, and first, since every other point's speedup is over it.
  if (std::erase(sizes, 1) > 0) measure_alone_in_turn(ctx, c, graph, state);
  // A world size skipped for want of its transport (no RDMA device) is a point of the series its
  // records would be, so the report says why it is missing there.
  const std::string transport = collectives::transport_options().get<std::string>(ctx.params, "transport");
  collectives::for_each_world_size(ctx, sizes, [&](transport::Transport& t) { measure_world_size(ctx, t, c, graph, state); },
                                   [&](int k) { return identity(c, transport, k); });
}

}  // namespace

StepKind scaling_step() {
  return {"models.scaling",
          "data-parallel training at each world size: images/s, speedup, exposed communication, predicted step time",
          training_schema(scaling_options()), run_scaling};
}

}  // namespace rocebench::models
