// The collectives.allreduce plan step with its ranks as threads of one process, over tcp (loopback)
// and verbs in the same run: for a host or guest (the soft-RoCE one) where the full harness is not
// wanted. Prints the sweep's table per transport and the verbs / tcp busbw ratio per size.
//   usage: collectives_transport_sweep RANKS MIN_BYTES MAX_BYTES [ITERS [SLOT_BYTES SLOTS]]
#include <cstdlib>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "../tests/local_rendezvous.hpp"
#include "rocebench/collectives/module.hpp"

using namespace rocebench;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: collectives_transport_sweep RANKS MIN_BYTES MAX_BYTES [ITERS [SLOT_BYTES SLOTS]]\n";
    return kExitBadInput;
  }
  const int ranks = std::atoi(argv[1]);
  const long iters = argc > 4 ? std::atol(argv[4]) : 10;
  const auto all = collectives::steps({});  // the bucket step, which needs gradient sizes, is not run here
  const auto& step = *std::find_if(all.begin(), all.end(), [](const StepKind& k) { return k.name == "collectives.allreduce"; });
  std::map<std::string, std::map<std::size_t, double>> busbw;
  std::map<std::string, std::map<std::size_t, json>> samples;  // time per operation (us), max over ranks
  for (const std::string transport : {"verbs", "tcp"}) {
    rbtest::LocalRendezvous shared(ranks);
    rbtest::KeptRecords kept;
    const auto errors = rbtest::on_ranks(ranks, [&](int r) {
      rbtest::LocalRendezvous::Rank rdv(shared, r);
      StepContext ctx;
      ctx.run_id = "bench";
      ctx.step = step.name;
      ctx.scope = transport;
      ctx.host = fmt::format("rank{}", r);
      ctx.rank = r;
      ctx.world = ranks;
      ctx.address = "127.0.0.1";
      ctx.deadline = std::chrono::milliseconds(120000);
      ctx.rendezvous = &rdv;
      ctx.recorder = &kept;
      if (argc > 6 && transport == "verbs") {
        ctx.params["verbs"] = {{"slot_bytes", std::atol(argv[5])}, {"slots", std::atol(argv[6])}};
      }
      ctx.params.update({{"transport", transport}, {"min_bytes", std::atol(argv[2])}, {"max_bytes", std::atol(argv[3])},
                    {"factor", 4}, {"warmup", 2}, {"iters", iters}, {"placement", "in"}, {"check", false}});
      step.run(ctx);
    });
    for (int r = 0; r < ranks; ++r) {
      if (!errors[r].empty()) std::cerr << transport << " rank " << r << ": " << errors[r] << "\n";
    }
    for (const auto& rec : kept.records) {
      if (rec.value("status", "") != "ok") std::cout << "# " << transport << ": " << rec.value("status", "") << " " << rec.value("reason", "") << "\n";
      else {
        const auto bytes = rec["params"]["bytes"].get<std::size_t>();
        busbw[transport][bytes] = rec["metrics"]["busbw_GBps"].get<double>();
        samples[transport][bytes] = rec["samples"];
      }
    }
  }
  for (const auto& [bytes, verbs] : busbw["verbs"]) {
    if (busbw["tcp"].count(bytes)) {
      const json& v = samples["verbs"][bytes];
      const json& t = samples["tcp"][bytes];
      std::cout << fmt::format("ratio {:>10} B: verbs {:.4f} GB/s / tcp {:.4f} GB/s = {:.2f}   (us per op, n={}: "
                               "verbs median {:.0f} [{:.0f}..{:.0f}], tcp median {:.0f} [{:.0f}..{:.0f}])\n",
                               bytes, verbs, busbw["tcp"][bytes], verbs / busbw["tcp"][bytes], v["n"].get<int>(),
                               v["median"].get<double>(), v["min"].get<double>(), v["max"].get<double>(),
                               t["median"].get<double>(), t["min"].get<double>(), t["max"].get<double>());
    }
  }
  return 0;
}
