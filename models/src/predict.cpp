#include "rocebench/models/predict.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <iostream>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/models/data_parallel.hpp"
#include "rocebench/models/derived.hpp"
#include "rocebench/models/published.hpp"
#include "rocebench/models/train.hpp"
#include "rocebench/models/zoo.hpp"
#include "shape.hpp"

namespace rocebench::models {

namespace {

constexpr const char* kProgram = "rocebench predict";

// An InputError from reading what `flag` names, with the flag in front ("--timeline: FILE:3: …").
template <typename F>
auto naming(const std::string& flag, F read) {
  try {
    return read();
  } catch (const InputError& e) {
    throw InputError(flag + ": " + e.what());
  }
}

// The speed a measured timeline runs at when no rate is given but a device is: its derived step.
struct DeviceStep {
  std::string device;
  double step_ms = 0;
};

ScaledTimeline scale(const std::string& name, Timeline t, const json& params,
                     const std::function<std::string(const std::string&)>& name_of,
                     const std::optional<DeviceStep>& device_step = std::nullopt) {
  const OptionTable& o = predict_options();
  const int measured_batch = t.source.value("batch", 0);
  const std::optional<int> batch = o.find<int>(params, "batch");
  const std::optional<double> step_ms = o.find<double>(params, "step_ms");
  const std::optional<double> images_per_s = o.find<double>(params, "images_per_s");
  ScaledTimeline s;
  s.batch = batch.value_or(measured_batch);
  if (s.batch < 1) throw InputError(fmt::format("{}: timeline '{}' does not say its batch: give it", name_of("batch"), name));
  if (step_ms && images_per_s)
    throw InputError(fmt::format("{} and {}: give one rate, not both", name_of("step_ms"), name_of("images_per_s")));
  const double measured_ms = t.forward_ms() + t.backward_ms() + t.update_ms;
  if (!(measured_ms > 0)) throw InputError(fmt::format("{}: timeline '{}' takes no time", name_of("timeline"), name));
  const bool other_batch = s.batch != measured_batch;
  if (other_batch && !step_ms && !images_per_s && !device_step)
    throw InputError(fmt::format("{}: {} images a step, but timeline '{}' was measured at batch {}: give {} or {} for batch {}",
                                 name_of("batch"), s.batch, name, measured_batch, name_of("step_ms"),
                                 name_of("images_per_s"), s.batch));
  const std::string at_batch = other_batch ? fmt::format(" at batch {}", s.batch) : "";
  double target_ms = measured_ms;
  if (images_per_s) {
    target_ms = 1e3 * s.batch / *images_per_s;
    s.label = fmt::format("{} scaled to {:g} images/s{}", name, *images_per_s, at_batch);
  } else if (step_ms) {
    target_ms = *step_ms;
    s.label = fmt::format("{} scaled to {:g} ms a step{}", name, *step_ms, at_batch);
  } else if (device_step) {
    target_ms = device_step->step_ms;
    s.label = fmt::format("{} scaled to {}'s derived {:.4g} ms a step{}", name, device_step->device, device_step->step_ms,
                          at_batch);
  } else {
    s.label = name + (t.source.value("kind", "") == "derived" ? " as derived" : " as measured");
  }
  s.factor = target_ms / measured_ms;
  s.timeline = scaled(std::move(t), s.factor);
  return s;
}

// A prediction's efficiency as its record states it: its images/s by the declared rate over ranks
// times one rank's.
double efficiency_of(const Prediction& p, const Prediction& alone, int batch, int ranks) {
  const DeclaredRate& rate = predicted_images_rate();
  return scaling_over(rate.of({{"batch", batch}, {"ranks", ranks}}, p.step_ms), ranks,
                      rate.of({{"batch", batch}, {"ranks", 1}}, alone.step_ms), 1)
      .efficiency;
}

// Up to the next value of 3 significant digits: a rate printed as found still reaches its target.
double round_up_3_digits(double x) {
  const double exponent = std::floor(std::log10(x)) - 2;
  if (exponent >= 0) return std::ceil(x / std::pow(10.0, exponent)) * std::pow(10.0, exponent);
  const double per_unit = std::pow(10.0, -exponent);  // divided by, so that 382 / 10 is 38.2 exactly
  return std::ceil(x * per_unit) / per_unit;
}

}  // namespace

const std::vector<double>& what_if_buckets_mb() {
  static const std::vector<double> sizes = {0.5, 1,  2,  3,   4,   5,   6,   8,   10,  12,  16,  20,  25,  32, 40,
                                            50,  64, 80, 100, 128, 160, 200, 256, 320, 400, 512, 640, 800, 1024};
  return sizes;
}

ScalingLoss WhatIf::loss() const {
  ScalingLoss l;
  l.gpus = placement.ranks;
  l.sync = to_string(mode);
  l.step_ms = now.step_ms;
  l.exposed_ms = now.exposed_ms;
  l.efficiency = efficiency;
  l.nic_Gbps = nic_Gbps;
  l.one_node = placement.nodes == 1;
  l.target = target;
  l.nic_Gbps_needed = nic_Gbps_needed;
  if (!l.one_node) l.efficiency_unlimited_nic = efficiency_unlimited_nic;
  l.bucket_mb_needed = bucket_mb_needed;
  l.best_bucket_mb = best_bucket_mb;
  l.best_bucket_efficiency = best_bucket_efficiency;
  return l;
}

WhatIf what_if(const PredictInputs& in, SyncMode mode, const Placement& placement, double target) {
  const Graph graph = build_model(in.model);
  const Timeline& timeline = in.compute.timeline;
  const Fabric fabric = in.fabric_for(mode);
  const auto play = [&](const Fabric& f, double bucket_mb) {
    return predict_step(graph, timeline, 0, bucket_options(bucket_mb, in.first_bucket_mb),
                        [&](std::size_t bytes) { return allreduce_ms(f, mode, placement, bytes); });
  };
  const Prediction alone =
      predict_step(graph, timeline, 0, bucket_options(in.bucket_mb, in.first_bucket_mb), [](std::size_t) { return 0.0; });
  const auto efficiency = [&](const Prediction& p) { return efficiency_of(p, alone, in.compute.batch, placement.ranks); };
  WhatIf w;
  w.mode = mode;
  w.placement = placement;
  w.target = target;
  w.now = play(fabric, in.bucket_mb);
  w.efficiency = efficiency(w.now);
  w.nic_Gbps = fabric.rails * fabric.nic_Gbps;
  if (placement.nodes > 1) {  // inside one node no NIC is crossed: its rate changes nothing
    const auto at_rate = [&](double node_Gbps) {
      Fabric f = fabric;
      f.nic_Gbps = node_Gbps / f.rails;
      return efficiency(play(f, in.bucket_mb));
    };
    w.efficiency_unlimited_nic = at_rate(std::numeric_limits<double>::infinity());
    if (w.efficiency_unlimited_nic >= target) {
      // Bracket the least rate that reaches the target (at_rate(low) < target <= at_rate(high)), then bisect it.
      constexpr double kSlowestGbps = 1e-3, kFastestGbps = 1e12;
      double low = w.nic_Gbps, high = w.nic_Gbps;
      while (low > kSlowestGbps && at_rate(low) >= target) high = low, low /= 2;
      while (high < kFastestGbps && at_rate(high) < target) low = high, high *= 2;
      while (high / low > 1 + 1e-6) {
        const double mid = std::sqrt(low * high);
        (at_rate(mid) >= target ? high : low) = mid;
      }
      w.nic_Gbps_needed = round_up_3_digits(high);
    }
  }
  w.best_bucket_efficiency = -1;
  for (double mb : what_if_buckets_mb()) {
    const double e = efficiency(play(fabric, mb));
    if (e > w.best_bucket_efficiency) w.best_bucket_mb = mb, w.best_bucket_efficiency = e;
    if (e >= target) {
      w.bucket_mb_needed = mb;
      break;
    }
  }
  return w;
}

const OptionTable& predict_options() {
  static const OptionTable table = [] {
    OptionSpec model = training_options().at("model");
    model.fallback = nullptr;  // a prediction names its model
    model.help = "the model whose gradients are reduced (rocebench train --list)";
    OptionSpec timeline = training_options().at("timeline");
    timeline.help = "the model's compute timeline: a shipped one's name or a results file with a `train --profile` "
                    "record; by default the model's shipped one, else one derived for --device";
    std::vector<int> doubling;
    for (int k = 1; k <= 128; k *= 2) doubling.push_back(k);
    std::vector<std::string> modes;
    for (SyncMode m : all_sync_modes()) modes.push_back(to_string(m));
    return OptionTable({
        model,
        timeline,
        {.key = "batch", .flag = "--batch", .rules = {{"minimum", 1}, {"maximum", 1 << 20}},
         .help = "images per step on each rank; by default the timeline's (another needs --step-ms or --images-per-s)"},
        {.key = "device", .flag = "--device", .type = OptionType::text, .rules = {{"enum", device_names()}},
         .help = "a named device (rated compute and memory bandwidth, models/src/derived.cpp): a model with no measured "
                 "timeline gets one derived from its per-layer FLOPs and bytes on it (needs --batch); a measured one "
                 "without a rate runs at its derived step",
         .metavar = "NAME"},
        {.key = "step_ms", .flag = "--step-ms", .type = OptionType::number, .rules = {{"exclusiveMinimum", 0}},
         .help = "one GPU's measured step at this batch: the timeline's shape scaled to it", .metavar = "MS"},
        {.key = "images_per_s", .flag = "--images-per-s", .type = OptionType::number, .rules = {{"exclusiveMinimum", 0}},
         .help = "one GPU's measured images/s at this batch: the timeline's shape scaled to it"},
        {.key = "fabric", .flag = "--fabric", .type = OptionType::text, .rules = {{"minLength", 1}},
         .help = fmt::format("the fabric: a built-in ({}) or a fabric file (models/fabrics/fabric.schema.json)",
                             fmt::join(builtin_fabrics(), ", ")),
         .metavar = "NAME|FILE"},
        {.key = "fabric_from", .flag = "--fabric-from", .type = OptionType::text, .rules = {{"minLength", 1}},
         .help = "instead of --fabric: the fabric fitted to these runs' collectives.allreduce sweeps (results folders or "
                 "files, comma-separated; two or more world sizes and sizes, one rank a host), α and β per algorithm",
         .metavar = "RUN,…"},
        {.key = "sync", .flag = "--sync", .type = OptionType::text, .rules = {{"minLength", 1}},
         .fallback = fmt::format("{}", fmt::join(modes, ",")),
         .help = "how buckets are averaged, one or more of ring (flat), hier (inside the node, then across), tree "
                 "(NCCL's double binary tree), ps (parameter server), rd (recursive doubling)",
         .metavar = "LIST"},
        data_parallel_options().at("bucket_mb"),
        data_parallel_options().at("first_bucket_mb"),
        {.key = "target_efficiency", .flag = "--target-efficiency", .type = OptionType::number,
         .rules = {{"exclusiveMinimum", 0}, {"maximum", 1}}, .fallback = 0.9,
         .help = "the what-if at the largest world size: the NIC rate (Gbit/s a node) and the bucket size that reach "
                 "this efficiency, per sync mode",
         .metavar = "E"},
        {.key = "published", .flag = "--published", .type = OptionType::text, .rules = {{"minLength", 1}},
         .help = fmt::format("instead of a prediction of these flags: each point of a published scale-out table (shipped: "
                             "{}; or a file, models/published/published.schema.json) predicted from its one-GPU figure, "
                             "the model's gradients and its fabric, with the error",
                             fmt::join(shipped_published(), ", ")),
         .metavar = "NAME|FILE"},
        {.key = "world_sizes", .flag = "--world-sizes", .type = OptionType::integer_list,
         .rules = {{"minimum", 1}, {"maximum", 1 << 20}}, .fallback = doubling,
         .help = "ranks (GPUs) to predict at: up to a node's GPUs, or whole nodes"},
    });
  }();
  return table;
}

namespace {

// in.timeline_name, in.compute and in.timeline_note (PredictInputs says which timeline wins).
void choose_timeline(PredictInputs& in, const Graph& graph, const json& params,
                     const std::function<std::string(const std::string&)>& name_of) {
  const OptionTable& o = predict_options();
  const std::optional<std::string> timeline = o.find<std::string>(params, "timeline");
  const std::optional<std::string> device_name = o.find<std::string>(params, "device");
  const Device* device = device_name ? &device_named(*device_name, name_of("device")) : nullptr;
  const std::optional<int> batch = o.find<int>(params, "batch");
  std::optional<std::string> measured = timeline;
  std::string why;
  if (!measured) {
    const std::vector<std::string> shipped = shipped_timelines_of(graph);
    // The one measured at --batch, else the first by name.
    for (const std::string& name : shipped) {
      if (!measured || (batch && load_timeline(name, graph).source.value("batch", 0) == *batch)) measured = name;
    }
    if (measured) why = "shipped";
  } else {
    why = "given";
  }
  if (measured) {
    const Timeline t = naming(name_of("timeline"), [&] { return load_timeline(*measured, graph); });
    std::optional<DeviceStep> device_step;
    if (device) {
      why += fmt::format("; a measured timeline wins over one derived for {}", device->name);
      const int at = batch.value_or(t.source.value("batch", 0));
      if (at > 0) {
        const Timeline derived = derive_timeline(graph, *device, at).timeline;
        device_step = DeviceStep{device->name, derived.forward_ms() + derived.backward_ms() + derived.update_ms};
      }
    }
    in.timeline_name = *measured;
    in.compute = scale(in.timeline_name, t, params, name_of, device_step);
    in.timeline_note = fmt::format("measured {} ({})", *measured, why);
    return;
  }
  if (!device)
    throw InputError(fmt::format("{} or {} is required: no measured timeline of {} is shipped ({} are)", name_of("timeline"),
                                 name_of("device"), in.model, fmt::join(shipped_timelines(), ", ")));
  if (!batch)
    throw InputError(fmt::format("{}: a timeline derived for {} needs the batch a rank trains", name_of("batch"), device->name));
  in.timeline_name = "derived-" + device->name;
  in.compute = scale(fmt::format("derived for {} ({})", device->name, device->precision),
                     derive_timeline(graph, *device, *batch).timeline, params, name_of);
  in.timeline_note = fmt::format(
      "derived from {}'s per-layer FLOPs and bytes for {} ({}, {}: {:g} TFLOP/s x {:g}, {:g} GB/s x {:g}): no measured "
      "timeline of {} is shipped", in.model, device->name, device->description, device->precision, device->peak_tflops,
      device->compute_efficiency, device->memory_GBps, device->memory_efficiency, in.model);
}

PredictInputs predict_inputs_on(const json& params, const std::function<std::string(const std::string&)>& name_of,
                                const Fabric* given_fabric) {
  const OptionTable& o = predict_options();
  const auto required = [&](const std::string& key) {
    const std::optional<std::string> value = o.find<std::string>(params, key);
    if (!value) throw InputError(fmt::format("{} is required", name_of(key)));
    return *value;
  };
  PredictInputs in;
  in.model = required("model");
  const std::optional<std::string> fabric = o.find<std::string>(params, "fabric");
  const std::optional<std::string> fabric_from = o.find<std::string>(params, "fabric_from");
  if (!given_fabric && fabric.has_value() == fabric_from.has_value())
    throw InputError(fmt::format("give one of {} and {}", name_of("fabric"), name_of("fabric_from")));
  const Graph graph = naming(name_of("model"), [&] { return build_model(in.model); });
  choose_timeline(in, graph, params, name_of);
  if (given_fabric) {
    in.fabric = *given_fabric;
  } else if (fabric) {
    in.fabric = naming(name_of("fabric"), [&] { return load_fabric(*fabric); });
  } else {
    std::vector<std::string> runs;
    for (std::size_t from = 0; from <= fabric_from->size();) {
      const std::size_t comma = std::min(fabric_from->find(',', from), fabric_from->size());
      if (comma > from) runs.push_back(fabric_from->substr(from, comma - from));
      from = comma + 1;
    }
    in.fit = fit_runs(runs, name_of("fabric_from"));
    in.fabric = in.fit->fabric_for(SyncMode::ring);
  }
  in.modes = parse_sync_modes(o.get<std::string>(params, "sync"), name_of("sync"));
  for (int ranks : o.get<std::vector<int>>(params, "world_sizes"))
    in.placements.push_back(place(in.fabric, ranks, name_of("world_sizes")));
  in.bucket_mb = o.get<double>(params, "bucket_mb");
  in.first_bucket_mb = o.get<double>(params, "first_bucket_mb");
  in.target_efficiency = o.get<double>(params, "target_efficiency");
  return in;
}

}  // namespace

PredictInputs predict_inputs(const json& params, const std::function<std::string(const std::string&)>& name_of) {
  return predict_inputs_on(params, name_of, nullptr);
}

PredictInputs predict_inputs(const json& params, const std::function<std::string(const std::string&)>& name_of,
                             const Fabric& fabric) {
  return predict_inputs_on(params, name_of, &fabric);
}

std::vector<ResultRecord> predict_records(const PredictInputs& in) {
  const Graph graph = build_model(in.model);
  const Timeline& timeline = in.compute.timeline;
  const collectives::BucketOptions buckets = bucket_options(in.bucket_mb, in.first_bucket_mb);
  const DeclaredRate& rate = predicted_images_rate();
  // The speedup's base: one rank, nothing to reduce (the same for every sync mode).
  const Prediction alone = predict_step(graph, timeline, 0, buckets, [](std::size_t) { return 0.0; });
  const double alone_images_per_s = rate.of({{"batch", in.compute.batch}, {"ranks", 1}}, alone.step_ms);
  const Placement* widest = nullptr;
  for (const Placement& p : in.placements) {
    if (!widest || p.ranks > widest->ranks) widest = &p;
  }
  std::vector<ResultRecord> records;
  for (SyncMode mode : in.modes) {
    const Fabric fabric = in.fabric_for(mode);
    for (const Placement& placement : in.placements) {
      const Prediction p = predict_step(graph, timeline, 0, buckets, [&](std::size_t bytes) {
        return allreduce_ms(fabric, mode, placement, bytes);
      });
      ResultRecord r;
      r.step = "models.predict";
      r.world = placement.ranks;
      r.params = {{"model", in.model},       {"engine", "predicted"},      {"timeline", in.timeline_name},
                  {"batch", in.compute.batch}, {"mode", "data_parallel"},  {"fabric", in.fit ? "fitted" : in.fabric.name},
                  {"sync", to_string(mode)},   {"bucket_mb", megabytes(in.bucket_mb)},
                  {"first_bucket_mb", megabytes(in.first_bucket_mb)},   {"ranks", placement.ranks}};
      if (mode == SyncMode::ps) r.params["servers"] = std::min(fabric.ps_servers, placement.ranks);
      const double images_per_s = rate.of(r.params, p.step_ms);
      const Scaling scaling = scaling_over(images_per_s, placement.ranks, alone_images_per_s, 1);
      r.metrics = {{"step_time_ms", p.step_ms},
                   {"images_per_s", images_per_s},
                   {"images_per_s_per_rank", images_per_s / placement.ranks},
                   {"speedup", scaling.speedup},
                   {"efficiency", scaling.efficiency},
                   {"compute_ms", p.compute_ms},
                   {"comm_ms", p.comm_ms},
                   {"exposed_comm_ms", p.exposed_ms},
                   {"buckets", p.buckets.size()},
                   {"first_waited_bucket", p.first_waited_bucket},
                   {"nodes", placement.nodes}};
      if (p.comm_ms > 0) r.metrics["overlap"] = std::clamp(1.0 - p.exposed_ms / p.comm_ms, 0.0, 1.0);
      json bucket_times = json::array();
      for (const PredictedBucket& b : p.buckets)
        bucket_times.push_back({{"bytes", b.bytes}, {"sealed_ms", b.sealed_ms}, {"start_ms", b.start_ms}, {"end_ms", b.end_ms}});
      // The inputs the prediction came from: a prediction, never a measurement.
      r.samples = {{"n", 0},
                   {"predicted_from", {{"timeline", in.compute.label},
                                       {"timeline_source", timeline.source},
                                       {"timeline_choice", in.timeline_note},
                                       {"timeline_scale", in.compute.factor},
                                       {"fabric_file", fabric.file},
                                       {"fabric", fabric.document},
                                       {"gpus_per_node", placement.per_node}}},
                   {"buckets", bucket_times},
                   {"backward_end_ms", p.backward_end_ms}};
      if (in.fit) r.samples["predicted_from"]["fabric_fit"] = in.fit->to_json();
      if (&placement == widest && placement.ranks > 1) {  // where scaling is lost, and what would win it back
        const WhatIf w = what_if(in, mode, placement, in.target_efficiency);
        add_what_if_metrics(w.loss(), r.metrics);
        r.samples["what_if"] = {{"text", scaling_loss_text(w.loss())},
                                {"nic", "the node's NIC rate (rails x line rate) bisected, the rest of the fabric as it is"},
                                {"buckets_mb_tried", what_if_buckets_mb()}};
      }
      records.push_back(std::move(r));
    }
  }
  return records;
}

std::string predict_table(const PredictInputs& in, const std::vector<ResultRecord>& records) {
  std::string out = fmt::format("# predicted: {} on {} ({} GPUs a node), {}, batch {} a rank, {} MiB buckets\n", in.model,
                                in.fabric.name, in.fabric.gpus_per_node, in.compute.label, in.compute.batch,
                                megabytes(in.bucket_mb).dump());
  out += "# timeline: " + in.timeline_note + "\n";
  if (in.fit) {
    for (const LevelFit& f : in.fit->fits)
      out += fmt::format("# fitted to {} {} allreduce records over {}: alpha {:.1f} us a step, {:.4g} GB/s, relative RMS {:.1f}%{}\n",
                         f.points.size(), f.algorithm, in.fit->transport, f.node.alpha_ms * 1e3, 1e-6 / f.node.beta_ms_per_byte,
                         100 * f.rms_relative, f.alpha_clamped ? " (alpha below 0 in the free fit: 0)" : "");
  }
  out += fmt::format("{:<5} {:>6} {:>5} {:>10} {:>11} {:>8} {:>6} {:>10} {:>9} {:>10} {:>12}\n", "sync", "ranks", "nodes",
                     "step ms", "images/s", "speedup", "eff", "compute ms", "comm ms", "exposed ms", "update waits");
  for (const ResultRecord& r : records) {
    const json& m = r.metrics;
    const std::size_t waited = m["first_waited_bucket"];
    out += fmt::format("{:<5} {:>6} {:>5} {:>10.1f} {:>11.1f} {:>8.2f} {:>6.3f} {:>10.1f} {:>9.1f} {:>10.1f} {:>12}\n",
                       r.params["sync"].get<std::string>(), r.world, m["nodes"].get<int>(), m["step_time_ms"].get<double>(),
                       m["images_per_s"].get<double>(), m["speedup"].get<double>(), m["efficiency"].get<double>(),
                       m["compute_ms"].get<double>(), m["comm_ms"].get<double>(), m["exposed_comm_ms"].get<double>(),
                       waited == 0 ? std::string("-") : fmt::format("bucket {}", waited));
  }
  for (const ResultRecord& r : records) {
    if (const auto loss = scaling_loss_of(r.world, r.params["sync"].get<std::string>(), r.metrics))
      out += "# where scaling is lost " + scaling_loss_text(*loss) + "\n";
  }
  return out;
}

namespace {

// --published: the table, its points predicted and their errors, for the console. The table states
// every input, so no other option may be given beside it.
std::string published_errors(const json& params, const std::function<std::string(const std::string&)>& name_of) {
  for (const auto& [key, value] : params.items()) {
    if (key != "published" && value != predict_options().at(key).fallback)  // defaults come along unasked
      throw InputError(fmt::format("{}: the table states every input; {} is not read beside it", name_of("published"),
                                   name_of(key)));
  }
  const PublishedTable table =
      naming(name_of("published"), [&] { return load_published(params["published"].get<std::string>()); });
  return published_report(table, naming(name_of("published"), [&] { return predict_published(table); }));
}

void run_predict(StepContext& ctx) {
  if (ctx.rank != 0) return;  // a prediction needs no ranks but the one that records it
  if (ctx.params.contains("published")) {
    std::cout << published_errors(ctx.params, [](const std::string& key) { return "field '" + key + "'"; }) << std::flush;
    return;
  }
  const PredictInputs in = predict_inputs(ctx.params, [](const std::string& key) { return "field '" + key + "'"; });
  const auto start = std::chrono::steady_clock::now();
  const std::vector<ResultRecord> records = predict_records(in);
  const double took_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  for (const ResultRecord& r : records) {
    StepContext rc = ctx;
    rc.world = r.world;
    rc.record(r);
  }
  std::cout << predict_table(in, records)
            << fmt::format("# {} predictions ({} world sizes x {} sync modes) in {:.1f} ms\n", records.size(),
                           in.placements.size(), in.modes.size(), took_ms)
            << std::flush;
}

}  // namespace

StepKind predict_step_kind() {
  json schema = predict_options().schema();
  schema["required"] = {"model"};  // and one of fabric, fabric_from; a timeline or a device (predict_inputs)
  return {"models.predict",
          "data-parallel step time predicted at any world size from a compute timeline and a fabric model, per sync mode",
          schema, run_predict};
}

int predict_main(const Args& args) {
  LauncherFlags launcher(1);
  ArgParser parser(kProgram,
                   "Data-parallel step time, images/s, speedup and efficiency predicted at world sizes never measured\n"
                   "(the models.predict step): the step of a measured compute timeline played as models.scaling plays\n"
                   "it, each bucket's reduction timed on a fabric model per sync mode. Records (engine \"predicted\") go\n"
                   "to rocebench-results/<run>/.");
  const OptionFlags flags(predict_options(), parser);
  launcher.add_to(parser);
  if (!parser.parse(args)) return kExitOk;
  const json params = flags.params(kProgram);
  if (params.contains("published")) {  // a table of the literature: printed, nothing recorded
    std::cout << published_errors(params, [](const std::string& key) { return predict_options().at(key).flag; })
              << std::flush;
    return kExitOk;
  }
  // Checked here, naming the flags, before anything starts.
  predict_inputs(params, [](const std::string& key) { return predict_options().at(key).flag; });
  return run_step_as_plan("models.predict", params, launcher.to_args(), {kProgram, predict_options().flag_of()});
}

}  // namespace rocebench::models
