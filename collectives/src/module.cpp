// The collectives module's plan steps and its command line (`rocebench allreduce`).
#include "rocebench/collectives/module.hpp"

#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/collectives/buckets.hpp"
#include "rocebench/collectives/nccl_sweep.hpp"
#include "rocebench/collectives/step_mesh.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/collectives/tcp_transport.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::collectives {

namespace {

StepKind sweep_step(const CollectiveSpec& spec) {
  return {"collectives." + spec.name,
          spec.name + " size sweep over TCP or verbs (nccl-tests style: algbw, busbw, #wrong)",
          sweep_params_schema(),
          [&spec](StepContext& ctx) {
            const SweepConfig config = sweep_config_from(ctx.params);
            for_each_world_size(ctx, [&](Transport& t) { run_sweep(ctx, t, spec, config); });
          }};
}

// Allreduce of a model's gradients through GradientBuckets, for each bucket size.
void run_bucket_sweep(StepContext& ctx, const GradientSizes& gradient_sizes) {
  const std::string model = ctx.params.value("model", "resnet50");
  const auto sizes = gradient_sizes(model);
  const std::vector<std::size_t> bucket_sizes =
      ctx.params.value("bucket_bytes", std::vector<std::size_t>{1 << 20, 4 << 20, 25 << 20, 100 << 20});
  const int iters = ctx.params.value("iters", 5);
  BucketOptions options;
  options.algorithm = parse_algorithm(ctx.params.value("algorithm", "ring"));
  options.collective.servers = ctx.params.value("servers", options.collective.servers);
  for_each_world_size(ctx, [&](Transport& t) {
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
  json schema = json::parse(R"({"type": "object", "additionalProperties": false, "properties": {
              "model": {"type": "string", "minLength": 1},
              "bucket_bytes": {"type": "array", "items": {"type": "integer", "minimum": 4}, "minItems": 1},
              "iters": {"type": "integer", "minimum": 1},
              "algorithm": {"enum": ["ring", "ps", "rd"]},
              "servers": {"type": "integer", "minimum": 1},
              "world_sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}}})");
  add_transport_params(schema);
  return {"collectives.buckets", "bucket size vs time for allreducing a model's gradient tensors (default ResNet-50's 161)",
          schema, [gradient_sizes](StepContext& ctx) { run_bucket_sweep(ctx, gradient_sizes); }};
}

int allreduce_main(const Args& args) {
  return run_guarded("rocebench allreduce", [&]() -> int {
    std::string collective = "allreduce", algorithm = "ring", dtype = "float32", op = "sum", placement = "both";
    std::string min_bytes = "8", max_bytes = "32M", chunk = "1M", world_sizes, transport = "tcp", device, congestion;
    std::string send_buffer;
    int factor = 2, warmup = 5, iters = 20, servers = 1, sockets = 1, ib_port = 1, gid_index = -1;
    int spin_us = static_cast<int>(TcpOptions{}.spin.count());
    bool no_check = false;
    LauncherFlags launcher;
    ArgParser p("rocebench allreduce",
                "Size sweeps of collectives between ranks, as nccl-tests: time per operation (max over ranks),\n"
                "algbw, busbw, and a check of every element. Starts its own ranks (default 2 local; --ranks,\n"
                "--netns, --launcher mpirun|srun --hostfile) and records to rocebench-results/<run>/.");
    p.option("--collective", &collective, "allreduce | allgather | reduce_scatter | nccl", "NAME")
        .option("--algorithm", &algorithm, "ring | ps (parameter server) | rd (recursive doubling)", "NAME")
        .option("-b", &min_bytes, "smallest size (8, 64K, 1M …)", "SIZE")
        .option("-e", &max_bytes, "largest size", "SIZE")
        .option("-f", &factor, "size multiplication factor")
        .option("-w", &warmup, "warm-up iterations per size")
        .option("-n", &iters, "timed iterations per size")
        .option("--dtype", &dtype, "float32 | float16 | bfloat16", "TYPE")
        .option("--op", &op, "sum | avg | max", "OP")
        .option("--placement", &placement, "both | in | out (in-place, out-of-place)", "WHICH")
        .option("--chunk", &chunk, "ring pipelining chunk", "SIZE")
        .option("--servers", &servers, "parameter-server ranks (S)")
        .option("--transport", &transport, "tcp | verbs (RC QPs; records a skip without an RDMA device)", "NAME")
        .option("--sockets", &sockets, "TCP sockets per peer")
        .option("--spin-us", &spin_us, "TCP: microseconds a wait polls before it sleeps (0: at once)")
        .option("--tcp-congestion", &congestion, "TCP congestion control (cubic, bbr …; default: the host's)", "NAME")
        .option("--tcp-sndbuf", &send_buffer,
                "TCP: fixed SO_SNDBUF per socket (0: the kernel's autotuning; default: 128K to a peer on this host, "
                "autotuning to others)",
                "SIZE")
        .option("--device", &device, "verbs: RDMA device (default: the first)", "NAME")
        .option("--ib-port", &ib_port, "verbs: device port")
        .option("--gid-index", &gid_index, "verbs: GID index (default: the RoCE v2 GID of the rank's address)")
        .option("--world-sizes", &world_sizes, "comma list of rank counts to sweep, e.g. 1,2,4", "LIST")
        .flag("--no-check", &no_check, "skip the check of every element");
    launcher.add_to(p);
    if (!p.parse(args)) return kExitOk;

    const std::size_t smallest = parse_bytes("-b", min_bytes), largest = parse_bytes("-e", max_bytes);
    if (smallest > largest) {
      throw UsageError(fmt::format("rocebench allreduce: -e {} is smaller than -b {}; the sweep would have no size",
                                   max_bytes, min_bytes));
    }
    json params = {{"min_bytes", smallest}, {"max_bytes", largest},
                   {"factor", factor}, {"warmup", warmup}, {"iters", iters}, {"dtype", dtype}, {"op", op},
                   {"check", !no_check}};
    std::string step = "collectives." + collective;
    if (collective == "nccl") {
      step = "collectives.nccl";
    } else {
      params["algorithm"] = algorithm;
      params["placement"] = placement;
      params["chunk_bytes"] = parse_bytes("--chunk", chunk);
      params["servers"] = servers;
      params["sockets_per_peer"] = sockets;
      params["spin_us"] = spin_us;
      if (!congestion.empty()) params["tcp_congestion"] = congestion;
      if (!send_buffer.empty()) params["tcp_sndbuf"] = parse_bytes("--tcp-sndbuf", send_buffer);
      if (transport != "tcp" && transport != "verbs") {
        throw UsageError("rocebench allreduce: --transport takes tcp or verbs, not '" + transport + "'");
      }
      params["transport"] = transport;
      if (transport == "verbs") {
        params["verbs"] = {{"ib_port", ib_port}};
        if (!device.empty()) params["verbs"]["device"] = device;
        if (gid_index >= 0) params["verbs"]["gid_index"] = gid_index;
      }
    }
    if (!world_sizes.empty()) {
      params["world_sizes"] = json::array();
      std::stringstream in(world_sizes);
      for (std::string item; std::getline(in, item, ',');) {
        if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos) {
          throw UsageError("rocebench allreduce: --world-sizes takes rank counts like 1,2,4, not '" + world_sizes + "'");
        }
        params["world_sizes"].push_back(std::stoi(item));
      }
    }
    const CommandOrigin origin{"rocebench allreduce", {{"algorithm", "--algorithm"}, {"dtype", "--dtype"}, {"op", "--op"},
                                                       {"placement", "--placement"}, {"transport", "--transport"},
                                                       {"min_bytes", "-b"},         {"max_bytes", "-e"},        {"factor", "-f"},
                         {"warmup", "-w"},            {"iters", "-n"},            {"chunk_bytes", "--chunk"},
                         {"servers", "--servers"},    {"sockets_per_peer", "--sockets"}, {"spin_us", "--spin-us"},
                         {"tcp_sndbuf", "--tcp-sndbuf"}, {"tcp_congestion", "--tcp-congestion"},
                         {"verbs", "--ib-port/--gid-index/--device"}, {"world_sizes", "--world-sizes"}}};
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
