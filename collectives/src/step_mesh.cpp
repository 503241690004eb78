#include "rocebench/collectives/step_mesh.hpp"

#include <iostream>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/mesh.hpp"
#include "rocebench/transport/verbs/mesh.hpp"

namespace rocebench::collectives {

namespace {

// The step's transport over the first k ranks: tcp (default) or verbs. Throws Unavailable on
// every one of them when a rank has no RDMA device: the step then records a skip, never falls back.
std::unique_ptr<transport::Transport> connect_mesh(StepContext& ctx, int k, std::size_t index) {
  const OptionTable& o = transport_options();
  const auto transport = o.get<std::string>(ctx.params, "transport");
  const std::string prefix = fmt::format("{}/{}/{}", ctx.scope, index, transport);
  if (transport == "verbs") {
    verbs::RingOptions options = verbs::ring_options_from(o.get<json>(ctx.params, "verbs"));
    options.key_prefix = prefix;
    return verbs::connect_mesh(*ctx.rendezvous, ctx.rank, k, ctx.address, ctx.host, options, Deadline(ctx.deadline));
  }
  tcp::MeshOptions options = tcp::mesh_options_from(ctx.params);
  options.key_prefix = prefix;
  return tcp::connect_mesh(*ctx.rendezvous, ctx.rank, k, ctx.address, ctx.host, options, Deadline(ctx.deadline));
}

void record_unavailable(const StepContext& ctx, int k, const std::string& reason, const SkipParams& skip_params) {
  if (ctx.rank != 0) return;
  ResultRecord r;
  if (skip_params) {
    r.params = skip_params(k);
  } else {
    r.params = ctx.params;
    r.params.erase("world_sizes");
    r.params["transport"] = transport_options().get<std::string>(ctx.params, "transport");
    r.params["ranks"] = k;
  }
  r.status = Status::skip;
  r.reason = reason;
  r.samples = {{"n", 0}};
  StepContext rc = ctx;
  rc.world = k;
  rc.record(r);
  std::cout << fmt::format("# {} over {} ranks skipped: {}\n", ctx.step, k, reason);
}

}  // namespace

const OptionTable& transport_options() {
  // Which transport, then each one's options as the transport declares them (tcp/mesh.hpp's fields,
  // verbs/mesh.hpp's object), all of them read by our own transports only.
  static const OptionTable table = [] {
    std::vector<OptionSpec> specs{
        {.key = "transport", .flag = "--transport", .type = OptionType::text, .rules = {{"enum", {"tcp", "verbs"}}},
         .fallback = "tcp", .help = "tcp | verbs (RC QPs; records a skip without an RDMA device)",
         .family = kOwnTransportsOnly, .metavar = "NAME"}};
    for (OptionSpec spec : tcp::mesh_option_table().specs()) {
      spec.family = kOwnTransportsOnly;
      specs.push_back(std::move(spec));
    }
    specs.push_back({.key = "verbs", .type = OptionType::object, .rules = verbs::ring_option_table().schema(),
                     .fallback = json::object(), .help = "the verbs transport's options", .family = kOwnTransportsOnly});
    return OptionTable(std::move(specs));
  }();
  return table;
}

std::vector<int> step_world_sizes(const StepContext& ctx, std::vector<int> fallback) {
  if (fallback.empty()) fallback = {ctx.world};
  std::vector<int> sizes = ctx.params.value("world_sizes", fallback);
  for (int k : sizes) {
    if (k > ctx.world) {
      throw InputError(fmt::format("field 'world_sizes': {} ranks asked for, but the run has {}", k, ctx.world));
    }
  }
  return sizes;
}

void for_each_world_size(StepContext& ctx, const std::function<void(transport::Transport&)>& body) {
  for_each_world_size(ctx, step_world_sizes(ctx), body);
}

void for_each_world_size(StepContext& ctx, const std::vector<int>& sizes, const std::function<void(transport::Transport&)>& body,
                         const SkipParams& skip_params) {
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const int k = sizes[i];
    if (ctx.rank < k) {
      std::unique_ptr<transport::Transport> transport;
      try {
        transport = connect_mesh(ctx, k, i);
      } catch (const Unavailable& e) {
        record_unavailable(ctx, k, e.what(), skip_params);
      }
      if (transport) body(*transport);
    }
    ctx.rendezvous->barrier(fmt::format("{}/size/{}", ctx.scope, i), ctx.deadline);
  }
}

}  // namespace rocebench::collectives
