#include "rocebench/models/module.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/models/data_parallel.hpp"
#include "rocebench/models/train.hpp"

namespace rocebench::models {
namespace {

constexpr const char* kProgram = "rocebench train";

void print_summary(std::ostream& out, const ResultRecord& r) {
  const auto& p = r.params;
  const std::string what = fmt::format("{} {} {} batch {}", p["model"].get<std::string>(), p["engine"].get<std::string>(),
                                       p["precision"].get<std::string>(), p["batch"].get<int>()) +
                           (p.contains("layout") ? " layout " + p["layout"].get<std::string>() : "");
  if (r.status != Status::ok) {
    out << fmt::format("{}: {}: {}\n", what, to_string(r.status), r.reason);
    return;
  }
  const auto& m = r.metrics;
  const auto& s = r.samples;
  out << fmt::format("{}: {:.1f} images/s, step {:.2f} ms median (min {:.2f}, max {:.2f}, stdev {:.2f}, n {}), "
                     "{:.3f} TFLOP/s, peak memory {:.0f} MiB, loss {:.3f}\n",
                     what, m["images_per_s"].get<double>(), s["median"].get<double>(), s["min"].get<double>(),
                     s["max"].get<double>(), s["stdev"].get<double>(), s["n"].get<int>(), m["tflops"].get<double>(),
                     m["peak_memory_MiB"].get<double>(), m["loss"].get<double>());
  if (m.contains("loader_images_per_s"))
    out << fmt::format("  input: {} loader threads decode {:.1f} images/s; a step waited {:.2f} ms for its batch on average\n",
                       p["loader_threads"].get<int>(), m["loader_images_per_s"].get<double>(),
                       m["input_wait_ms_per_step"].get<double>());
}

// `train --world-sizes …`: the models.scaling step as a one-step plan, on as many ranks as the
// largest world size unless the launcher flags say otherwise.
int run_scaling(const TrainConfig& c, const std::string& world_sizes, const std::string& sync,
                const std::string& transport, double bucket_mb, double first_bucket_mb, int servers, int threads,
                const LauncherFlags& launcher) {
  json params{{"model", c.model}, {"engine", c.engine}, {"precision", c.precision}, {"layout", c.layout},
              {"batch", c.batch}, {"iters", c.steps}, {"warmup", c.warmup}, {"sync", sync},
              {"transport", transport}, {"bucket_mb", bucket_mb}, {"first_bucket_mb", first_bucket_mb},
              {"servers", servers}, {"threads", threads}};
  if (!c.timeline.empty()) params["timeline"] = c.timeline;
  params["world_sizes"] = json::array();
  int largest = 0;
  std::stringstream in(world_sizes);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty() || item.size() > 6 || item.find_first_not_of("0123456789") != std::string::npos || std::stoi(item) < 1)
      throw UsageError(fmt::format("{}: --world-sizes takes rank counts like 1,2,4, not '{}'", kProgram, world_sizes));
    params["world_sizes"].push_back(std::stoi(item));
    largest = std::max(largest, std::stoi(item));
  }
  Args launch = launcher.to_args();
  const bool placed = std::any_of(launch.begin(), launch.end(), [](const std::string& a) {
    return a == "--ranks" || a == "--launcher" || a == "--hostfile";
  });
  if (!placed) launch.insert(launch.end(), {"--ranks", std::to_string(largest)});
  const CommandOrigin origin{kProgram, {{"model", "--model"}, {"engine", "--engine"}, {"precision", "--precision"},
                                        {"layout", "--layout"}, {"batch", "--batch"}, {"iters", "--iters"},
                                        {"warmup", "--warmup"}, {"sync", "--sync"}, {"transport", "--transport"},
                                        {"bucket_mb", "--bucket-mb"}, {"first_bucket_mb", "--first-bucket-mb"},
                                        {"servers", "--servers"}, {"threads", "--threads"},
                                        {"timeline", "--timeline"}, {"world_sizes", "--world-sizes"}}};
  return run_step_as_plan("models.scaling", params, launch, origin);
}

int train_main(const Args& args) {
  TrainConfig c;
  bool list = false;
  std::string out, run_id, host, world_sizes, sync = "ring", transport = "tcp";
  double bucket_mb = 25, first_bucket_mb = 1;
  int servers = 1, threads = 1;
  LauncherFlags launcher;
  ArgParser parser(kProgram, "Training throughput (images/sec) of one rank on a fixed random batch; with --world-sizes,\n"
                             "data-parallel training at each world size (the models.scaling step): images/s, speedup,\n"
                             "exposed communication and the predicted step time.");
  parser.flag("--list", &list, "print the models with parameters, gradient tensors and FLOPs per image, and exit")
      .option("--model", &c.model, "model from --list (default resnet50)", "NAME")
      .option("--engine", &c.engine, "cpu (oneDNN), gpu (cuDNN) or replay (a measured timeline) (default cpu)", "NAME")
      .option("--timeline", &c.timeline, "replay engine: a shipped timeline's name or a results file with a "
                                         "`train --profile` record", "NAME|FILE")
      .option("--precision", &c.precision, "fp32, tf32, bf16 or fp16 (default fp32)", "NAME")
      .option("--layout", &c.layout, "cpu: blocked (oneDNN's preferred layouts) or plain (NCHW throughout) (default blocked)", "NAME")
      .option("--batch", &c.batch, "images per step on this rank (default 32)")
      .option("--iters", &c.steps, "timed training steps (default 20)")
      .renamed("--steps", "--iters")
      .option("--warmup", &c.warmup, "untimed steps first (default 5)")
      .option("--data", &c.data, "train on the images of DIR/<class>/<image> (JPEG, PNG, PPM) through the data loader "
                                 "instead of a fixed random batch", "DIR")
      .option("--loader-threads", &c.loader_threads, "data loader: decoding threads (default 4)")
      .option("--prefetch", &c.prefetch, "data loader: batches in flight, 2 = double buffering (default 2)")
      .option("--gpu", &c.device, "gpu engine: the GPU to train on (default 0)", "N")
      .flag("--profile", &c.profile, "time every layer of the timed steps (gpu engine) and print the table to stderr")
      .option("--host", &host, "host name in records (default: this host's name)", "NAME")
      .option("--run-id", &run_id, "run id in records (default: train-<time>)", "ID")
      .option("--out", &out, "append the result record (JSON Lines) to FILE", "FILE")
      .option("--world-sizes", &world_sizes, "data-parallel training at each of these rank counts, e.g. 1,2,4", "LIST")
      .option("--sync", &sync, "data parallel: how buckets are averaged: ring | ps (parameter server) | rd (default ring)", "NAME")
      .option("--transport", &transport, "data parallel: tcp | verbs (default tcp)", "NAME")
      .option("--bucket-mb", &bucket_mb, "data parallel: bucket size after the 1 MiB first one; 0: one reduction after "
                                         "backward, no overlap (default 25)", "MB")
      .option("--first-bucket-mb", &first_bucket_mb, "data parallel: the first bucket's size (default 1, as DDP's)", "MB")
      .option("--servers", &servers, "data parallel, ps: parameter-server ranks (default 1)")
      .option("--threads", &threads, "data parallel, cpu engine: oneDNN threads per rank (default 1)");
  launcher.add_to(parser);
  if (!parser.parse(args)) return kExitOk;
  if (!world_sizes.empty()) return run_scaling(c, world_sizes, sync, transport, bucket_mb, first_bucket_mb, servers, threads, launcher);
  if (list) {
    std::cout << zoo_table();
    return kExitOk;
  }
  ResultRecord r = measure_training(c, 1);
  r.host = host.empty() ? this_hostname() : host;
  if (!out.empty()) {
    RecordWriter writer(out);
    writer.append(to_json(r, run_id.empty() ? "train-" + utc_now_rfc3339() : run_id));
    writer.sync();
  }
  print_summary(std::cout, r);
  return kExitOk;
}

json params_schema() {
  json schema = training_params_schema();
  schema["properties"].update(json::parse(R"({
      "data": {"type": "string", "minLength": 1},
      "loader_threads": {"type": "integer", "minimum": 1},
      "prefetch": {"type": "integer", "minimum": 2},
      "profile": {"type": "boolean"}
  })"));
  return schema;
}

void run_step(StepContext& ctx) {
  const json& p = ctx.params;
  TrainConfig c = training_config_from(p);
  c.data = p.value("data", c.data);
  c.loader_threads = p.value("loader_threads", c.loader_threads);
  c.prefetch = p.value("prefetch", c.prefetch);
  c.profile = p.value("profile", c.profile);
  c.device = ctx.local_rank;  // one GPU per rank on a host, as NCCL's ranks
  ctx.record(measure_training(c, ctx.world));
}

}  // namespace

std::vector<Subcommand> subcommands() {
  return {{"train", "training throughput (images/sec) of real models",
           [](const Args& args) { return run_guarded(kProgram, [&] { return train_main(args); }); }}};
}

std::vector<StepKind> steps() {
  return {{"models.train", "images/sec of one model on each rank (forward, backward, SGD) on a fixed random batch",
           params_schema(), run_step},
          scaling_step()};
}

}  // namespace rocebench::models
