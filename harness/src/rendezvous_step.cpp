// harness.rendezvous: every rank publishes an endpoint and reads everyone else's, then times a
// series of barriers — the smallest end-to-end test that the run's ranks can all talk.
#include <unistd.h>

#include <thread>

#include <fmt/format.h>

#include "commands.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"

namespace rocebench {

namespace {

void run_rendezvous_step(StepContext& ctx) {
  Rendezvous& rdv = *ctx.rendezvous;
  const int rounds = ctx.params.value("rounds", 20);
  const int interval_ms = ctx.params.value("interval_ms", 0);

  const std::int64_t t0 = now_ns();
  const std::string mine = fmt::format("{} {}:{}", ctx.address, ctx.host, ::getpid());
  rdv.set(fmt::format("{}/endpoint/{}", ctx.scope, ctx.rank), mine);
  int wrong = 0;
  for (int r = 0; r < ctx.world; ++r) {
    const std::string seen = rdv.get(fmt::format("{}/endpoint/{}", ctx.scope, r), ctx.deadline);
    if (r == ctx.rank && seen != mine) ++wrong;
  }
  const double exchange_ms = static_cast<double>(now_ns() - t0) / 1e6;

  std::vector<double> barrier_us;
  for (int i = 0; i < rounds; ++i) {
    const std::int64_t start = now_ns();
    rdv.barrier(ctx.scope + "/round", ctx.deadline);
    barrier_us.push_back(static_cast<double>(now_ns() - start) / 1e3);
    if (interval_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }

  ResultRecord r;
  r.params = {{"rounds", rounds}, {"interval_ms", interval_ms}};
  r.metrics = {{"exchange_ms", exchange_ms}};
  if (!barrier_us.empty()) {
    const Summary s = summarize(barrier_us);
    r.metrics["barrier_us_p50"] = s.median;
    r.metrics["barrier_us_p99"] = s.p99;
    r.metrics["barrier_us_max"] = s.max;
    r.samples = to_json(s);
  } else {
    r.samples = {{"n", 0}};
  }
  if (wrong) {
    r.status = Status::fail;
    r.reason = "the store returned a different endpoint than this rank published";
  }
  ctx.record(r);
}

}  // namespace

StepKind rendezvous_step() {
  return {"harness.rendezvous",
          "every rank exchanges an endpoint with every other, then times barriers",
          json::parse(R"({
            "type": "object", "additionalProperties": false,
            "properties": {
              "rounds": {"type": "integer", "minimum": 0, "maximum": 1000000},
              "interval_ms": {"type": "integer", "minimum": 0, "maximum": 60000}
            }})"),
          run_rendezvous_step};
}

}  // namespace rocebench
