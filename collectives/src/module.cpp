// The collectives module's plan steps and its command line (`rocebench allreduce`).
#include "rocebench/collectives/module.hpp"

#include <iostream>

#include <fmt/format.h>

#include "rocebench/collectives/buckets.hpp"
#include "rocebench/collectives/nccl_sweep.hpp"
#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/transport/verbs/mesh.hpp"

namespace rocebench::collectives {

namespace {

StepKind sweep_step(const CollectiveSpec& spec) {
  return {"collectives." + spec.name,
          spec.name + " size sweep over TCP or verbs (nccl-tests style: algbw, busbw, #wrong)",
          sweep_params_schema(),
          [&spec](StepContext& ctx) {
            const SweepConfig config = sweep_config_from(ctx.params);
            for_each_world_size(ctx, [&](transport::Transport& t) { run_sweep(ctx, t, spec, config); });
          }};
}

// The bucket sweep's options: the sweep's algorithm, servers and world sizes, and the transport's.
const OptionTable& bucket_options() {
  static const OptionTable table = [] {
    const OptionTable& sweep = sweep_options();
    std::vector<OptionSpec> specs{
        {.key = "model", .type = OptionType::text, .rules = {{"minLength", 1}}, .fallback = "resnet50",
         .help = "the model whose gradient tensors are allreduced"},
        {.key = "bucket_bytes", .type = OptionType::integer_list, .rules = {{"minimum", 4}},
         .fallback = {1 << 20, 4 << 20, 25 << 20, 100 << 20}, .help = "bucket sizes to sweep"},
        {.key = "iters", .rules = {{"minimum", 1}}, .fallback = 5, .help = "timed allreduces of the whole model per size"},
        sweep.at("algorithm"), sweep.at("servers"), sweep.at("world_sizes")};
    const auto& transport = transport_options().specs();
    specs.insert(specs.end(), transport.begin(), transport.end());
    return OptionTable(std::move(specs));
  }();
  return table;
}

// Allreduce of a model's gradients through GradientBuckets, for each bucket size.
void run_bucket_sweep(StepContext& ctx, const GradientSizes& gradient_sizes) {
  const OptionTable& o = bucket_options();
  const auto model = o.get<std::string>(ctx.params, "model");
  const auto sizes = gradient_sizes(model);
  const auto bucket_sizes = o.get<std::vector<std::size_t>>(ctx.params, "bucket_bytes");
  const int iters = o.get<int>(ctx.params, "iters");
  BucketOptions options;
  options.algorithm = parse_algorithm(o.get<std::string>(ctx.params, "algorithm"));
  options.collective.servers = o.get<int>(ctx.params, "servers");
  for_each_world_size(ctx, [&](transport::Transport& t) {
    std::vector<std::vector<float>> grads;
    std::size_t total = 0;
    for (auto n : sizes) {
      grads.emplace_back(n, static_cast<float>(t.rank() + 1));
      total += n;
    }
    for (const std::size_t bucket_bytes : bucket_sizes) {
      std::vector<double> times_ms;
      std::size_t buckets = 0;
      options.first_bucket_bytes = options.bucket_bytes = bucket_bytes;
      GradientBuckets b(t, options, ctx.deadline);
      for (int it = -1; it < iters; ++it) {  // one warm-up
        const std::size_t sent_before = b.buckets_sent();
        const std::int64_t t0 = now_ns();
        for (auto& g : grads) b.add(g);
        b.finish();
        if (it >= 0) times_ms.push_back(static_cast<double>(now_ns() - t0) / 1e6);
        buckets = b.buckets_sent() - sent_before;
      }
      allreduce(t, Algorithm::rd, times_ms.data(), times_ms.size(), DataType::float64, ReduceOp::max, {},
                Deadline(ctx.deadline));
      if (t.rank() != 0) continue;
      const Summary s = summarize(times_ms);
      ResultRecord r;
      r.params = {{"model", model}, {"tensors", sizes.size()}, {"bytes", total * sizeof(float)},
                  {"bucket_bytes", bucket_bytes}, {"algorithm", to_string(options.algorithm)}, {"transport", t.name()},
                  {"ranks", t.world()}};
      if (options.algorithm == Algorithm::ps) r.params["servers"] = options.collective.servers;
      r.metrics = {{"time_ms", s.median}, {"buckets", buckets}};
      r.samples = to_json(s);
      StepContext rc = ctx;
      rc.world = t.world();
      rc.record(r);
      std::cout << fmt::format("# buckets {:>10} B: {:>4} buckets, {:.2f} ms per allreduce of {}'s {} tensors\n",
                               bucket_bytes, buckets, s.median, model, sizes.size());
    }
  });
}

StepKind bucket_step(GradientSizes gradient_sizes) {
  const json schema = bucket_options().schema();
  return {"collectives.buckets", "bucket size vs time for allreducing a model's gradient tensors (default ResNet-50's 161)",
          schema, [gradient_sizes](StepContext& ctx) { run_bucket_sweep(ctx, gradient_sizes); }};
}

int allreduce_main(const Args& args) {
  const std::string program = "rocebench allreduce";
  return run_guarded(program, [&]() -> int {
    std::string collective = "allreduce";
    LauncherFlags launcher(2);
    ArgParser p(program,
                "Size sweeps of collectives between ranks, as nccl-tests: time per operation (max over ranks),\n"
                "algbw, busbw, and a check of every element. Starts its own ranks (--ranks, --netns,\n"
                "--launcher mpirun|srun --hostfile) and records to rocebench-results/<run>/.");
    p.option("--collective", &collective, "allreduce | allgather | reduce_scatter | nccl", "NAME");
    OptionFlags flags(sweep_options(), p), verbs_flags(verbs::ring_option_table(), p);
    launcher.add_to(p);
    if (!p.parse(args)) return kExitOk;

    json params = flags.params(program);
    if (params["min_bytes"] > params["max_bytes"]) {
      throw UsageError(fmt::format("{}: -e {} is smaller than -b {}; the sweep would have no size", program,
                                   flags.text("max_bytes"), flags.text("min_bytes")));
    }
    const std::string step = "collectives." + collective;
    if (collective == "nccl") {
      // Our transports' options are not NCCL's: their defaults go, a value typed stays to be refused.
      for (const auto& spec : sweep_options().specs()) {
        if (spec.family == kOwnTransportsOnly && !flags.given(spec.key)) params.erase(spec.key);
      }
    } else if (params["transport"] == "verbs") {
      params["verbs"] = verbs_flags.params(program);
    }
    const CommandOrigin origin{program, sweep_options().flag_of()};
    return run_step_as_plan(step, params, launcher.to_args(), origin);
  });
}

}  // namespace

std::vector<Subcommand> subcommands() {
  return {{"allreduce", "ring / parameter-server / NCCL collective sweeps: algbw, busbw, #wrong", allreduce_main}};
}

std::vector<StepKind> steps(const GradientSizes& gradient_sizes) {
  return {sweep_step(allreduce_spec()), sweep_step(allgather_spec()), sweep_step(reduce_scatter_spec()),
          bucket_step(gradient_sizes), nccl_step()};
}

}  // namespace rocebench::collectives
