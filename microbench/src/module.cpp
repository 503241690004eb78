// rocebench probe (CLI) and the microbench plan steps.
#include "rocebench/microbench/module.hpp"

#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/microbench/allpairs.hpp"
#include "rocebench/microbench/probe.hpp"

namespace rocebench::microbench {

namespace {

constexpr int kDefaultPort = 18515;  // perftest's

// `rocebench probe TRANSPORT TEST --server | --client HOST`.
int probe_main(const Args& args) {
  return run_guarded("rocebench probe", [&] {
    const std::string program = "rocebench probe";
    std::string transport, test, client, bind = "0.0.0.0", results;
    bool server = false;
    int port = kDefaultPort;
    double deadline_s = 30;
    ArgParser p(program, "Point-to-point latency and bandwidth over TCP or RDMA verbs (RC), as perftest:\n"
                         "start one side with --server, the other with --client HOST.\n"
                         "TCP tests: lat, bw. Verbs tests: write_lat send_lat read_lat write_bw send_bw read_bw.\n"
                         "Subcommands: rocebench probe allpairs --help (all-pairs link matrix),\n"
                         "rocebench probe host --help (memory, sum-kernel and GPU micro-benchmarks).");
    p.positional("TRANSPORT", &transport, probe_options().at("transport").help)
        .positional("TEST", &test, probe_options().at("test").help)
        .flag("--server", &server, "wait for one client, serve its tests")
        .option("--client", &client, "connect to this server", "HOST")
        .option("--port", &port, fmt::format("TCP / rdma_cm port (default {}; 0: any free one)", kDefaultPort))
        .range(0, 65535)
        .option("--bind", &bind, "server: the address to listen on (verbs: picks the GID too)", "ADDR")
        .option("--deadline", &deadline_s, "give up on any single wait after this long (default 30)", "S")
        .range(0.001, 86400)
        .option("--results", &results, "append result records (JSON Lines) to this file", "FILE");
    OptionFlags flags(probe_options(), p);
    if (!p.parse(args)) return kExitOk;
    if (server == !client.empty()) throw UsageError("give exactly one of --server and --client HOST\n\n" + p.usage());
    if (flags.given("all") && flags.given("bytes")) throw UsageError("give --size or --all, not both");
    json params = flags.params(program);
    params["transport"] = transport;
    params["test"] = test;
    ProbeSpec spec = spec_from_params(params);
    spec.verbs.address = server ? (bind == "0.0.0.0" ? "" : bind) : "";
    spec.wait = std::chrono::milliseconds(static_cast<std::int64_t>(deadline_s * 1000));

    const std::string run_id = fmt::format("probe-{}", utc_now_rfc3339());
    std::optional<RecordWriter> writer;
    if (!results.empty()) writer.emplace(results);
    const std::string host = this_hostname();
    auto emit = [&](ResultRecord r) {
      r.host = host;
      if (writer) writer->append(to_json(r, run_id));
    };
    std::unique_ptr<Probe> probe;
    try {
      if (server) {
        auto listener = listen_probe(spec, bind, port);
        std::cerr << fmt::format("rocebench probe: {} {} server on port {}, waiting up to {} s for a client\n",
                                 spec.transport, spec.test, listener->port(), deadline_s);
        probe = listener->accept();
      } else {
        probe = connect_probe(spec, client, port);
      }
    } catch (const Unavailable& e) {
      emit(skip_record(spec.driver.step, spec_params(spec), e.what()));
      std::cout << fmt::format("skip: {}\n", e.what());
      return kExitOk;
    }
    if (server) {
      const int served = run_passive(*probe);
      std::cerr << fmt::format("rocebench probe: served {} size(s) to {}\n", served, probe->peer());
      return kExitOk;
    }
    std::cout << table_header(probe->kind()) << std::flush;
    run_active(*probe, spec.driver, [&](const ResultRecord& r) {
      std::cout << table_row(r, probe->kind()) << std::flush;
      emit(r);
    });
    return kExitOk;
  });
}

int probe_dispatch(const Args& args, const std::vector<SumKernel>& sum_kernels) {
  if (!args.empty() && args.front() == "allpairs") return allpairs_main(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args.front() == "host") return hostbench_main(Args(args.begin() + 1, args.end()), sum_kernels);
  return probe_main(args);
}

// microbench.probe: ranks 2k and 2k+1 form a pair; the even one serves, the odd one measures.
void run_probe_step(StepContext& ctx) {
  ProbeSpec spec = spec_from_params(ctx.params);
  spec.wait = ctx.deadline;
  spec.verbs.address = ctx.address;
  const std::string key = fmt::format("{}/pair/{}", ctx.scope, ctx.rank / 2);
  spec.driver.step = ctx.step;
  if (ctx.rank % 2 == 0 && ctx.rank + 1 >= ctx.world) return;  // the odd rank out has no partner
  try {
    if (ctx.rank % 2 == 0) {
      std::unique_ptr<ProbeServer> listener;
      try {
        listener = listen_probe(spec, ctx.address, 0);
      } catch (const Unavailable&) {
        ctx.rendezvous->set(key, "skip");  // the partner records nothing and moves on
        throw;
      }
      ctx.rendezvous->set(key, fmt::format("{} {} {}", ctx.address, listener->port(), ctx.host));
      auto probe = listener->accept();
      run_passive(*probe);
    } else {
      const std::string endpoint = ctx.rendezvous->get(key, ctx.deadline);
      if (endpoint == "skip") return;
      std::istringstream fields(endpoint);
      std::string address, server_host;
      int port = 0;
      fields >> address >> port >> server_host;
      // The peer by host and rank, not by its address and ephemeral port: two runs of a plan line up.
      const std::string peer = fmt::format("{} rank {}", server_host, ctx.rank - 1);
      auto probe = connect_probe(spec, address, port);
      run_active(*probe, spec.driver, [&](ResultRecord r) {
        r.params["peer"] = peer;
        ctx.record(std::move(r));
      });
    }
  } catch (const Unavailable& e) {
    ctx.record(skip_record(ctx.step, spec_params(spec), e.what()));
  }
}

}  // namespace

std::vector<Subcommand> subcommands(std::vector<SumKernel> sum_kernels) {
  return {{"probe", "verbs and TCP latency / bandwidth probes, all-pairs matrix, host/GPU micro-benchmarks",
           [sum_kernels = std::move(sum_kernels)](const Args& args) { return probe_dispatch(args, sum_kernels); }}};
}

std::vector<StepKind> steps(std::vector<SumKernel> sum_kernels) {
  return {{"microbench.probe", "latency / bandwidth between rank pairs (2k serves, 2k+1 measures), TCP or verbs",
           probe_params_schema(), run_probe_step},
          allpairs_step(), hostbench_step(std::move(sum_kernels))};
}

}  // namespace rocebench::microbench
