#include "rocebench/models/module.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <omp.h>

#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/models/cpu_share.hpp"
#include "rocebench/models/data_parallel.hpp"
#include "rocebench/models/predict.hpp"
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

// models.train's own options: images from a folder instead of a fixed random batch, the GPU, profiling.
const OptionTable& input_options() {
  static const OptionTable table = [] {
    const TrainConfig d;
    return OptionTable({
        {.key = "data", .flag = "--data", .type = OptionType::text, .rules = {{"minLength", 1}},
         .help = "train on the images of DIR/<class>/<image> (JPEG, PNG, PPM) through the data loader instead of a "
                 "fixed random batch",
         .metavar = "DIR"},
        {.key = "loader_threads", .flag = "--loader-threads", .rules = {{"minimum", 1}, {"maximum", 1024}},
         .fallback = d.loader_threads, .help = "data loader: decoding threads"},
        {.key = "prefetch", .flag = "--prefetch", .rules = {{"minimum", 2}, {"maximum", 1024}}, .fallback = d.prefetch,
         .help = "data loader: batches in flight, 2 = double buffering"},
        {.key = "gpu", .flag = "--gpu", .rules = {{"minimum", 0}, {"maximum", 1023}}, .fallback = d.device,
         .help = "gpu engine: the GPU of a host's first rank; its other ranks take the next ones"},
        {.key = "profile", .flag = "--profile", .type = OptionType::boolean, .fallback = d.profile,
         .help = "time every layer of the timed steps (gpu engine) and print the table to stderr"},
    });
  }();
  return table;
}

const OptionTable& train_options() {
  static const OptionTable table = training_table(input_options().specs());
  return table;
}

TrainConfig train_config_from(const json& p) {
  const OptionTable& o = train_options();
  TrainConfig c = training_config_from(p);
  c.data = o.find<std::string>(p, "data").value_or(c.data);
  c.loader_threads = o.get<int>(p, "loader_threads");
  c.prefetch = o.get<int>(p, "prefetch");
  c.profile = o.get<bool>(p, "profile");
  return c;
}

// A flag of the other step's own options is refused rather than ignored (--sync without --world-sizes).
void refuse_flags_of(const OptionTable& table, const OptionFlags& flags, const std::string& why) {
  for (const auto& spec : table.specs()) {
    if (flags.given(spec.key)) throw UsageError(fmt::format("{}: {} {}", kProgram, spec.flag, why));
  }
}

// `rocebench train` runs its step as a one-step plan, as every measuring command does: models.train
// on one rank, or with --world-sizes models.scaling on as many ranks as the largest world size
// (or --baseline-ranks).
int train_main(const Args& args) {
  bool list = false;
  LauncherFlags launcher(1);
  ArgParser parser(kProgram, "Training throughput (images/sec) of one rank on a fixed random batch; with --world-sizes,\n"
                             "data-parallel training at each world size (the models.scaling step): images/s, speedup,\n"
                             "exposed communication and the predicted step time. Records to rocebench-results/<run>/.");
  parser.flag("--list", &list, "print the models with parameters, gradient tensors and FLOPs per image, and exit");
  const OptionFlags training(training_options(), parser);
  parser.renamed("--steps", "--iters");
  const OptionFlags input(input_options(), parser);
  const OptionFlags data_parallel(data_parallel_options(), parser);
  const OptionFlags transport(collectives::transport_options(), parser);
  launcher.add_to(parser);
  parser.renamed("--out", "--results");
  if (!parser.parse(args)) return kExitOk;
  json params = training.params(kProgram);
  check_engine_timeline(training_config_from(params));
  CommandOrigin origin{kProgram, training_options().flag_of()};
  if (data_parallel.given("world_sizes")) {
    refuse_flags_of(input_options(), input, "is models.train's: not with --world-sizes");
    params.update(data_parallel.params(kProgram));
    params.update(transport.params(kProgram));
    origin.flag_of.merge(data_parallel_options().flag_of());
    origin.flag_of.merge(collectives::transport_options().flag_of());
    auto ranks = params["world_sizes"].get<std::vector<int>>();
    ranks.push_back(params.value("baseline_ranks", 1));
    return run_step_as_plan("models.scaling", params, launcher.to_args(*std::max_element(ranks.begin(), ranks.end())),
                            origin);
  }
  refuse_flags_of(data_parallel_options(), data_parallel, "is for data-parallel training: it needs --world-sizes");
  refuse_flags_of(collectives::transport_options(), transport, "is for data-parallel training: it needs --world-sizes");
  if (list) {
    std::cout << zoo_table();
    return kExitOk;
  }
  params.update(input.params(kProgram));
  origin.flag_of.merge(input_options().flag_of());
  return run_step_as_plan("models.train", params, launcher.to_args(), origin);
}

// The threads a rank computed on, the CPUs it had, and, when its CPUs had more threads than CPUs,
// whom it shared them with: its images/s is then its share of them, not what it trains alone.
void record_cpu_share(ResultRecord& r, const CpuShare& share) {
  if (r.status != Status::ok) return;
  r.metrics["threads"] = share.threads;
  r.metrics["cpus"] = share.cpus;
  if (!share.shared.empty()) r.samples["cpus_shared"] = share.shared;
}

void print_cpu_share(std::ostream& out, const ResultRecord& r, const CpuShare& share) {
  if (r.status != Status::ok || r.params.value("engine", "") != "cpu") return;
  out << fmt::format("  {} thread{} on {} CPU{}{}\n", share.threads, share.threads == 1 ? "" : "s", share.cpus,
                     share.cpus == 1 ? "" : "s",
                     share.shared.empty() ? "" : fmt::format("; ranks share CPUs: {}, so each rank's images/s is its share of them", share.shared));
}

void run_step(StepContext& ctx) {
  TrainConfig c = train_config_from(ctx.params);
  c.device = train_options().get<int>(ctx.params, "gpu") + ctx.local_rank;  // one GPU per rank on a host, as NCCL's ranks
  const CpuShare share = share_cpus(ctx, c.engine == "cpu");
  if (c.engine == "cpu") omp_set_num_threads(share.threads);
  ResultRecord r = measure_training(c, ctx.world);
  record_cpu_share(r, share);
  std::ostringstream line;
  if (ctx.world > 1) line << fmt::format("rank {} on {}: ", ctx.rank, ctx.host);
  print_summary(line, r);
  print_cpu_share(line, r, share);
  std::cout << line.str() << std::flush;
  ctx.record(r);
}

}  // namespace

std::vector<Subcommand> subcommands() {
  return {{"train", "training throughput (images/sec) of real models",
           [](const Args& args) { return run_guarded(kProgram, [&] { return train_main(args); }); }},
          {"predict", "data-parallel step time predicted at any world size from a timeline and a fabric model",
           [](const Args& args) { return run_guarded("rocebench predict", [&] { return predict_main(args); }); }}};
}

std::vector<StepKind> steps() {
  return {{"models.train", "images/sec of one model on each rank (forward, backward, SGD) on a fixed random batch",
           training_schema(train_options()), run_step},
          scaling_step(), predict_step_kind()};
}

}  // namespace rocebench::models
