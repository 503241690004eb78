// The collectives module's plan steps and its command line (`rocebench allreduce`).
#include "rocebench/collectives/module.hpp"

#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/collectives/buckets.hpp"
#include "rocebench/collectives/nccl_sweep.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/collectives/tcp_transport.hpp"
#include "rocebench/collectives/verbs_transport.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench::collectives {

namespace {

// The step's transport over the first k ranks: tcp (default) or verbs. Throws TransportUnavailable on
// every one of them when a rank has no RDMA device: the step then records a skip, never falls back.
std::unique_ptr<Transport> connect_mesh(StepContext& ctx, int k, std::size_t index) {
  const std::string transport = ctx.params.value("transport", "tcp");
  const std::string prefix = fmt::format("{}/{}/{}", ctx.scope, index, transport);
  if (transport == "verbs") {
    VerbsOptions options = verbs_options_from(ctx.params.value("verbs", json::object()));
    options.key_prefix = prefix;
    return connect_verbs_mesh(*ctx.rendezvous, ctx.rank, k, ctx.address, ctx.host, options, Deadline(ctx.deadline));
  }
  TcpOptions options;
  options.sockets_per_peer = ctx.params.value("sockets_per_peer", 1);
  options.spin = std::chrono::microseconds(ctx.params.value("spin_us", options.spin.count()));
  options.congestion = ctx.params.value("tcp_congestion", "");
  if (ctx.params.contains("tcp_sndbuf")) options.send_buffer = ctx.params["tcp_sndbuf"].get<std::size_t>();
  options.key_prefix = prefix;
  return connect_tcp_mesh(*ctx.rendezvous, ctx.rank, k, ctx.address, ctx.host, options, Deadline(ctx.deadline));
}

void record_unavailable(const StepContext& ctx, int k, const std::string& reason) {
  if (ctx.rank != 0) return;
  ResultRecord r;
  r.params = ctx.params;
  r.params.erase("world_sizes");
  r.params["transport"] = ctx.params.value("transport", "tcp");
  r.params["ranks"] = k;
  r.status = Status::skip;
  r.reason = reason;
  r.samples = {{"n", 0}};
  StepContext rc = ctx;
  rc.world = k;
  rc.record(r);
  std::cout << fmt::format("# {} over {} ranks skipped: {}\n", ctx.step, k, reason);
}

// Runs `body` on a mesh of the first k ranks, for each k of the step's world_sizes (default: all
// ranks); the ranks left out of a size wait at the barrier that closes it.
template <typename Body>
void for_each_world_size(StepContext& ctx, Body body) {
  std::vector<int> sizes = ctx.params.value("world_sizes", std::vector<int>{ctx.world});
  for (int k : sizes) {
    if (k > ctx.world) throw InputError(fmt::format("world_sizes asks for {} ranks but the run has {}", k, ctx.world));
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int k = sizes[i];
    if (ctx.rank < k) {
      std::unique_ptr<Transport> transport;
      try {
        transport = connect_mesh(ctx, k, i);
      } catch (const TransportUnavailable& e) {
        record_unavailable(ctx, k, e.what());
      }
      if (transport) body(*transport);
    }
    ctx.rendezvous->barrier(fmt::format("{}/size/{}", ctx.scope, i), ctx.deadline);
  }
}

StepKind sweep_step(const CollectiveSpec& spec) {
  return {"collectives." + spec.name,
          spec.name + " size sweep over TCP or verbs (nccl-tests style: algbw, busbw, #wrong)",
          sweep_params_schema(),
          [&spec](StepContext& ctx) {
            const SweepConfig config = sweep_config_from(ctx.params);
            for_each_world_size(ctx, [&](Transport& t) { run_sweep(ctx, t, spec, config); });
          }};
}

// Allreduce of ResNet-50's gradients through GradientBuckets, for each bucket size.
void run_bucket_sweep(StepContext& ctx) {
  const auto sizes = resnet50_gradient_sizes();
  const std::vector<std::size_t> bucket_sizes =
      ctx.params.value("bucket_bytes", std::vector<std::size_t>{1 << 20, 4 << 20, 25 << 20, 100 << 20});
  const int iters = ctx.params.value("iters", 5);
  const Algorithm algorithm = parse_algorithm(ctx.params.value("algorithm", "ring"));
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
      for (int it = -1; it < iters; ++it) {  // one warm-up
        GradientBuckets b(t, bucket_bytes, algorithm, ctx.deadline);
        const std::int64_t t0 = now_ns();
        for (auto& g : grads) b.add(g);
        b.finish();
        if (it >= 0) times_ms.push_back(static_cast<double>(now_ns() - t0) / 1e6);
        buckets = b.buckets_sent();
      }
      allreduce(t, Algorithm::rd, times_ms.data(), times_ms.size(), DataType::float64, ReduceOp::max, {},
                Deadline(ctx.deadline));
      if (t.rank() != 0) continue;
      const Summary s = summarize(times_ms);
      ResultRecord r;
      r.params = {{"model", "resnet50"}, {"tensors", sizes.size()}, {"bytes", total * sizeof(float)},
                  {"bucket_bytes", bucket_bytes}, {"algorithm", to_string(algorithm)}, {"transport", t.name()},
                  {"ranks", t.world()}};
      r.metrics = {{"time_ms", s.median}, {"buckets", buckets}};
      r.samples = to_json(s);
      StepContext rc = ctx;
      rc.world = t.world();
      rc.record(r);
      std::cout << fmt::format("# buckets {:>10} B: {:>4} buckets, {:.2f} ms per allreduce of {} tensors\n",
                               bucket_bytes, buckets, s.median, sizes.size());
    }
  });
}

StepKind bucket_step() {
  json schema = json::parse(R"({"type": "object", "additionalProperties": false, "properties": {
              "bucket_bytes": {"type": "array", "items": {"type": "integer", "minimum": 4}, "minItems": 1},
              "iters": {"type": "integer", "minimum": 1},
              "algorithm": {"enum": ["ring", "ps", "rd"]},
              "transport": {"enum": ["tcp", "verbs"]},
              "world_sizes": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}}})");
  schema["properties"]["verbs"] = verbs_params_schema();
  return {"collectives.buckets", "bucket size vs time for allreducing ResNet-50's 161 gradient tensors", schema,
          run_bucket_sweep};
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

    json params = {{"min_bytes", parse_bytes("-b", min_bytes)}, {"max_bytes", parse_bytes("-e", max_bytes)},
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
    return run_step_as_plan(step, params, launcher.to_args());
  });
}

}  // namespace

std::vector<Subcommand> subcommands() {
  return {{"allreduce", "ring / parameter-server / NCCL collective sweeps: algbw, busbw, #wrong", allreduce_main}};
}

std::vector<StepKind> steps() {
  return {sweep_step(allreduce_spec()), sweep_step(allgather_spec()), sweep_step(reduce_scatter_spec()), bucket_step(),
          nccl_step()};
}

}  // namespace rocebench::collectives
