// rocebench probe (CLI) and the microbench plan steps.
#include "rocebench/microbench/module.hpp"

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/run_id.hpp"
#include "rocebench/common/hostname.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/microbench/allpairs.hpp"
#include "rocebench/microbench/incast.hpp"
#include "rocebench/microbench/probe.hpp"

namespace rocebench::microbench {

namespace {

constexpr int kDefaultPort = 18515;  // perftest's

// `rocebench probe TRANSPORT TEST`: the microbench.probe step as a one-step plan (ranks 2k serve,
// 2k+1 measure), or perftest's two sides by hand with --server | --client HOST.
int probe_main(const Args& args) {
  return run_guarded("rocebench probe", [&]() -> int {
    const std::string program = "rocebench probe";
    std::string transport, test, client, bind;
    bool server = false;
    int port = -1;  // -1: not given
    LauncherFlags launcher(2);
    ArgParser p(program, "Point-to-point latency and bandwidth over TCP or RDMA verbs (RC), as perftest.\n"
                         "Starts its own ranks and records to rocebench-results/<run>/: rank 2k serves, 2k+1 measures\n"
                         "(default 2 local; --ranks, --netns, --launcher mpirun|srun --hostfile). Or by hand across two\n"
                         "hosts: start one side with --server, the other with --client HOST.\n"
                         "TCP tests: lat, bw. Verbs tests: write_lat send_lat read_lat write_bw send_bw read_bw.\n"
                         "Subcommands: rocebench probe allpairs --help (all-pairs link matrix),\n"
                         "rocebench probe tcp|verbs incast --help (N-1 senders into one receiver, in turn),\n"
                         "rocebench probe host --help (memory, sum-kernel and GPU micro-benchmarks).");
    p.positional("TRANSPORT", &transport, probe_options().at("transport").help)
        .positional("TEST", &test, probe_options().at("test").help)
        .flag("--server", &server, "by hand: wait for one client, serve its tests")
        .option("--client", &client, "by hand: connect to this server", "HOST")
        .option("--port", &port, fmt::format("by hand: TCP / rdma_cm port (default {}; 0: any free one)", kDefaultPort))
        .range(0, 65535)
        .option("--bind", &bind, "--server: the address to listen on (verbs: picks the GID too)", "ADDR");
    OptionFlags flags(probe_options(), p);
    launcher.add_to(p);
    if (!p.parse(args)) return kExitOk;
    if (server && !client.empty()) throw UsageError("give --server or --client HOST, not both\n\n" + p.usage());
    if (flags.given("all") && flags.given("bytes")) throw UsageError("give --size or --all, not both");
    json params = flags.params(program);
    params["transport"] = transport;
    params["test"] = test;
    if (!server && client.empty()) {
      if (port >= 0 || !bind.empty()) throw UsageError(program + ": --port and --bind are for --server / --client HOST");
      return run_step_as_plan("microbench.probe", params, launcher.to_args(), {program, probe_options().flag_of()});
    }
    const Args launch = launcher.given();
    for (std::size_t i = 0; i < launch.size(); i += 2) {
      if (launch[i] != "--results" && launch[i] != "--deadline") {
        throw UsageError(fmt::format("{}: {} starts ranks; with --server / --client HOST you start each side", program, launch[i]));
      }
    }
    if (port < 0) port = kDefaultPort;
    check_launcher_args(launch, {program, {}});
    const std::string deadline = launch_value(launch, "--deadline");
    const double deadline_s = deadline.empty() ? 30 : parse_number<double>("--deadline", deadline);
    ProbeSpec spec = spec_from_params(params);
    spec.verbs.address = server && bind != "0.0.0.0" ? bind : "";
    spec.wait = std::chrono::milliseconds(static_cast<std::int64_t>(deadline_s * 1000));

    // The client records what it measured into the results folder, as a run's rank 0 would.
    const std::string results = launch_value(launch, "--results");
    const std::string run_id = new_run_id("probe");
    std::optional<RecordWriter> writer;
    const std::string host = this_hostname();
    auto emit = [&](ResultRecord r) {
      if (results.empty()) return;
      if (!writer) writer.emplace(run_results_file(results, run_id));
      r.host = host;
      writer->append(to_json(r, run_id));
    };
    std::unique_ptr<Probe> probe;
    try {
      if (server) {
        auto listener = listen_probe(spec, bind.empty() ? "0.0.0.0" : bind, port);
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
    if (writer) std::cerr << fmt::format("rocebench probe: results in {}\n", (std::filesystem::path(results) / run_id).string());
    return kExitOk;
  });
}

int probe_dispatch(const Args& args) {
  if (!args.empty() && args.front() == "allpairs") return allpairs_main(Args(args.begin() + 1, args.end()));
  if (!args.empty() && args.front() == "host") return hostbench_main(Args(args.begin() + 1, args.end()));
  if (args.size() >= 2 && args[1] == "incast") return incast_main(args.front(), Args(args.begin() + 2, args.end()));
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
      // The table perftest would print, by the rank that measures: row by row for one pair; with
      // several, each pair's whole table at its end, so that their rows do not interleave.
      const bool one_pair = ctx.world <= 3;
      std::string table = (one_pair ? "" : fmt::format("# {} -> {} rank {}\n", peer, ctx.host, ctx.rank)) + table_header(probe->kind());
      const auto show = [&] {
        std::cout << table << std::flush;
        table.clear();
      };
      if (one_pair) show();
      run_active(*probe, spec.driver, [&](ResultRecord r) {
        table += table_row(r, probe->kind());
        if (one_pair) show();
        r.params["peer"] = peer;
        ctx.record(std::move(r));
      });
      show();
    }
  } catch (const Unavailable& e) {
    std::cout << fmt::format("skip: {}\n", e.what()) << std::flush;
    ctx.record(skip_record(ctx.step, spec_params(spec), e.what()));
  }
}

}  // namespace

std::vector<Subcommand> subcommands() {
  return {{"probe", "verbs and TCP latency / bandwidth probes, all-pairs matrix, host/GPU micro-benchmarks",
           probe_dispatch}};
}

std::vector<StepKind> steps(std::vector<SumKernel> sum_kernels) {
  return {{"microbench.probe", "latency / bandwidth between rank pairs (2k serves, 2k+1 measures), TCP or verbs",
           probe_params_schema(), run_probe_step},
          allpairs_step(), incast_step(), hostbench_step(std::move(sum_kernels))};
}

}  // namespace rocebench::microbench
