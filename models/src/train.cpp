#include "rocebench/models/train.hpp"

#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "data_loader.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/models/engine.hpp"
#include "rocebench/models/timeline.hpp"
#include "rocebench/models/zoo.hpp"
#include "shape.hpp"

namespace rocebench::models {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A "Key:   123 kB" field of a /proc file, in bytes; -1 when absent.
std::int64_t proc_kib_field(const std::string& file, const std::string& key) {
  const auto kib = HostFs().read_field(file, key);
  return kib ? std::stoll(*kib) * 1024 : -1;
}

json identity(const TrainConfig& c) {
  json id{{"model", c.model}, {"engine", c.engine}, {"precision", c.precision}, {"batch", c.batch}, {"mode", "single"}};
  if (c.layout != "blocked") id["layout"] = c.layout;
  if (!c.data.empty()) id.update({{"input", "images"}, {"loader_threads", c.loader_threads}, {"prefetch", c.prefetch}});
  if (c.engine == "replay") id["timeline"] = c.timeline;
  return id;
}

}  // namespace

const OptionTable& training_options() {
  static const OptionTable table = [] {
    const TrainConfig d;
    json models = json::array();  // checked with the other flags, before any rank starts
    for (const auto& m : zoo()) models.push_back(m.name);
    return OptionTable({
        {.key = "model", .flag = "--model", .type = OptionType::text, .rules = {{"enum", models}}, .fallback = d.model,
         .help = "model from --list", .metavar = "NAME"},
        {.key = "engine", .flag = "--engine", .type = OptionType::text, .rules = {{"enum", {"cpu", "gpu", "replay"}}},
         .fallback = d.engine, .help = "cpu (oneDNN), gpu (cuDNN) or replay (a measured timeline)", .metavar = "NAME"},
        {.key = "timeline", .flag = "--timeline", .type = OptionType::text, .rules = {{"minLength", 1}},
         .help = "replay engine: a shipped timeline's name or a results file with a `train --profile` record",
         .metavar = "NAME|FILE"},
        {.key = "precision", .flag = "--precision", .type = OptionType::text,
         .rules = {{"enum", {"fp32", "tf32", "bf16", "fp16"}}}, .fallback = d.precision, .help = "arithmetic precision",
         .metavar = "NAME"},
        {.key = "layout", .flag = "--layout", .type = OptionType::text, .rules = {{"enum", {"blocked", "plain"}}},
         .fallback = d.layout, .help = "cpu: blocked (oneDNN's preferred layouts) or plain (NCHW throughout)",
         .metavar = "NAME"},
        {.key = "batch", .flag = "--batch", .rules = {{"minimum", 1}}, .fallback = d.batch,
         .help = "images per step on each rank"},
        {.key = "iters", .flag = "--iters", .rules = {{"minimum", 1}, {"maximum", 100000}}, .fallback = d.iters,
         .help = "timed training steps"},
        {.key = "warmup", .flag = "--warmup", .rules = {{"minimum", 0}, {"maximum", 100000}}, .fallback = d.warmup,
         .help = "untimed steps first"},
    });
  }();
  return table;
}

OptionTable training_table(const std::vector<OptionSpec>& more) {
  std::vector<OptionSpec> specs = training_options().specs();
  specs.insert(specs.end(), more.begin(), more.end());
  return OptionTable(std::move(specs), {{"steps", "iters"}});
}

json training_schema(const OptionTable& table) {
  json schema = table.schema();
  schema["required"] = {"model"};
  return schema;
}

TrainConfig training_config_from(const json& p) {
  const OptionTable& o = training_options();
  TrainConfig c;
  c.model = o.get<std::string>(p, "model");
  c.engine = o.get<std::string>(p, "engine");
  c.timeline = o.find<std::string>(p, "timeline").value_or(c.timeline);
  c.precision = o.get<std::string>(p, "precision");
  c.layout = o.get<std::string>(p, "layout");
  c.batch = o.get<int>(p, "batch");
  c.iters = o.get<int>(p, "iters");
  c.warmup = o.get<int>(p, "warmup");
  return c;
}

void check_engine_timeline(const TrainConfig& c) {
  if (c.engine == "replay" && c.timeline.empty())
    throw InputError("the replay engine needs a timeline (--timeline, plan field 'timeline'): a shipped one's name or a results file");
  if (c.engine != "replay" && !c.timeline.empty())
    throw InputError(fmt::format("--timeline (plan field 'timeline') needs --engine replay: the {} engine plays no timeline and "
                                 "would ignore it", c.engine));
}

void validate(const TrainConfig& c) {
  const Graph graph = build_model(c.model);
  parse_precision(c.precision);
  const auto engines = engine_names();
  if (std::find(engines.begin(), engines.end(), c.engine) == engines.end())
    throw InputError(fmt::format("unknown engine '{}'; engines: {}", c.engine, fmt::join(engines, ", ")));
  check_engine_timeline(c);
  if (c.layout != "blocked" && c.layout != "plain")
    throw InputError(fmt::format("unknown layout '{}'; layouts: blocked, plain", c.layout));
  if (c.batch < 1 || c.iters < 1 || c.warmup < 0)
    throw InputError(fmt::format("batch ({}) and iters ({}) must be at least 1, warmup ({}) at least 0", c.batch, c.iters, c.warmup));
  if (!c.data.empty() && (c.loader_threads < 1 || c.prefetch < 2))
    throw InputError(fmt::format("loader threads ({}) must be at least 1 and prefetch ({}) at least 2", c.loader_threads, c.prefetch));
  if (c.engine == "cpu") {
    const std::int64_t needed = bytes_needed(graph, c.batch);
    const std::int64_t available = proc_kib_field("/proc/meminfo", "MemAvailable");
    if (available >= 0 && needed > available)
      throw InputError(fmt::format("batch {} of {} does not fit: it needs {:.1f} GiB (activations, their gradients, "
                                   "weights, gradients, momentum); {:.1f} GiB of memory is available",
                                   c.batch, c.model, needed / (1024 * kMiB), available / (1024 * kMiB)));
  }
}

ResultRecord measure_training(const TrainConfig& c, int world) {
  validate(c);
  const Graph graph = build_model(c.model);
  ResultRecord r;
  r.step = "models.train";
  r.world = world;
  r.params = identity(c);
  std::unique_ptr<Engine> engine;
  try {
    engine = make_engine(c.engine, graph, {.batch = c.batch, .precision = parse_precision(c.precision), .seed = c.seed,
                                            .plain_layout = c.layout == "plain", .profile = c.profile,
                                            .device = c.device, .timeline = c.timeline});
  } catch (const Unavailable& e) {
    r.status = Status::skip;
    r.reason = e.what();
    return r;
  }

  // Either a folder of images through the data loader, or a fixed random batch as
  // tf_cnn_benchmarks' synthetic data, where the input pipeline costs nothing.
  std::unique_ptr<DataLoader> loader;
  if (!c.data.empty()) {
    ImageFolder folder = scan_image_folder(c.data);
    if (static_cast<int>(folder.classes.size()) > graph.classes())
      throw InputError(fmt::format("data folder '{}' has {} classes; {} has {} outputs", c.data, folder.classes.size(),
                                   c.model, graph.classes()));
    loader = std::make_unique<DataLoader>(std::move(folder), LoaderOptions{.shape = graph.input_shape(), .batch = c.batch,
                                                                           .threads = c.loader_threads,
                                                                           .prefetch = c.prefetch, .seed = c.seed});
  } else {
    const SyntheticBatch b = synthetic_batch(graph, c.batch, static_cast<std::uint32_t>(c.seed));
    engine->set_batch(b.images, b.labels);
  }

  const SgdOptions sgd;
  std::vector<double> step_ms;
  std::int64_t timed_ns = 0;
  double waited_before_timing_s = 0;
  std::vector<LayerTime> layers_before_timing;  // taken when the first timed step starts
  for (int i = 0; i < c.warmup + c.iters; ++i) {
    if (loader && i == c.warmup) waited_before_timing_s = loader->stats().waited_s;
    if (i == c.warmup) layers_before_timing = engine->layer_times();
    const std::int64_t t0 = now_ns();
    if (loader) {
      const Batch& batch = loader->next();
      engine->set_batch(batch.images, batch.labels);
    }
    engine->forward();
    engine->backward({});
    engine->update(sgd, 0.01);
    engine->synchronize();
    const std::int64_t dt = now_ns() - t0;
    if (i < c.warmup) continue;
    timed_ns += dt;
    step_ms.push_back(static_cast<double>(dt) / 1e6);
  }
  const Summary s = summarize(step_ms);
  if (c.profile) {
    const std::vector<LayerTime> after = engine->layer_times();
    std::cerr << (after.empty() ? fmt::format("--profile: engine {} does not time its layers\n", c.engine)
                                : layer_time_table(graph, layers_before_timing, after, c.iters, s.median));
  }
  // Every image over the time the steps took (their mean step), as models/shape.json declares images/s.
  const double images_per_s = images_rate().of(r.params, static_cast<double>(timed_ns) / 1e6 / c.iters);
  // The host's high-water mark for cpu; the gpu engine's device allocations (buffers and workspace).
  const std::int64_t peak = c.engine == "cpu" ? proc_kib_field("/proc/self/status", "VmHWM") : -1;
  r.metrics = {{"images_per_s", images_per_s},
               {"step_time_ms_p50", s.median},
               {"tflops", 3 * graph.forward_flops_per_image() * images_per_s / 1e12},
               {"peak_memory_MiB", static_cast<double>(peak >= 0 ? peak : engine->bytes_allocated()) / kMiB},
               {"loss", engine->loss()}};
  if (loader) {
    const LoaderStats ls = loader->stats();
    r.metrics["loader_images_per_s"] = ls.images_per_s();
    r.metrics["input_wait_ms_per_step"] = (ls.waited_s - waited_before_timing_s) * 1e3 / c.iters;
  }
  r.samples = to_json(s);
  if (const std::vector<LayerTime> after = engine->layer_times(); c.profile && !after.empty())
    r.samples.update(to_samples(graph, timeline_between(graph, layers_before_timing, after, c.iters)));
  return r;
}

std::string layer_time_table(const Graph& graph, const std::vector<LayerTime>& before,
                             const std::vector<LayerTime>& after, int steps, double step_ms) {
  struct Row {
    int nodes = 0;
    double forward = 0, backward = 0;
  };
  const Timeline timeline = timeline_between(graph, before, after, steps);
  std::vector<LayerTime> per_step = timeline.nodes;
  per_step.push_back({-1, 0, timeline.update_ms});
  auto name = [&](const LayerTime& t) { return t.node < 0 ? std::string("update") : std::string(to_string(graph.node(t.node).op)); };
  std::map<std::string, Row> by_op;
  double sum = 0;
  for (const LayerTime& t : per_step) {
    Row& row = by_op[name(t)];
    ++row.nodes;
    row.forward += t.forward_ms;
    row.backward += t.backward_ms;
    sum += t.forward_ms + t.backward_ms;
  }
  std::ostringstream out;
  out << fmt::format("Time per timed step by layer (gpu: events around each node; cpu: wall time; mean of {} steps)\n", steps);
  out << fmt::format("{:<12}{:>6}{:>12}{:>13}{:>10}{:>8}\n", "op", "nodes", "forward ms", "backward ms", "total ms", "share");
  for (const auto& [op, row] : by_op)
    out << fmt::format("{:<12}{:>6}{:>12.3f}{:>13.3f}{:>10.3f}{:>7.1f}%\n", op, row.nodes, row.forward, row.backward,
                       row.forward + row.backward, 100 * (row.forward + row.backward) / step_ms);
  out << fmt::format("{:<12}{:>6}{:>12}{:>13}{:>10.3f}{:>7.1f}% of the step's {:.3f} ms (p50); the rest is gaps between "
                     "kernels and the host\n", "all", per_step.size(), "", "", sum, 100 * sum / step_ms, step_ms);
  std::sort(per_step.begin(), per_step.end(), [](const LayerTime& a, const LayerTime& b) {
    return a.forward_ms + a.backward_ms > b.forward_ms + b.backward_ms;
  });
  out << "slowest nodes:\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(12, per_step.size()); ++k) {
    const LayerTime& t = per_step[k];
    const std::string shape = t.node < 0 ? "" : fmt::format("{}x{}x{}", graph.node(t.node).out.c, graph.node(t.node).out.h, graph.node(t.node).out.w);
    out << fmt::format("  node {:>4} {:<12}{:>14}{:>12.3f}{:>13.3f}\n", t.node, name(t), shape, t.forward_ms, t.backward_ms);
  }
  return out.str();
}

std::string zoo_table() {
  std::ostringstream out;
  out << fmt::format("{:<16} {:>13} {:>9} {:>13} {:>9}  {}\n", "model", "parameters", "grad", "GFLOPs/image",
                     "input", "description");
  for (const auto& m : zoo()) {
    const Graph g = m.build();
    const Shape in = g.input_shape();
    out << fmt::format("{:<16} {:>13} {:>9} {:>13.3f} {:>9}  {}\n", m.name, g.parameter_count(), g.params().size(),
                       g.forward_flops_per_image() / 1e9, fmt::format("{}x{}x{}", in.c, in.h, in.w), m.description);
  }
  out << "grad: gradient tensors (one per weight, bias, batch-norm scale and shift).\n"
         "GFLOPs/image: forward pass, 2 x multiply-accumulates of conv and linear layers (batch norm, ReLU,\n"
         "pooling and adds not counted); a training step is counted as 3 x forward for TFLOP/s.\n";
  return out.str();
}

}  // namespace rocebench::models
