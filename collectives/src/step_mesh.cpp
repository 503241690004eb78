#include "rocebench/collectives/step_mesh.hpp"

#include <iostream>

#include <fmt/format.h>

#include "rocebench/collectives/tcp_transport.hpp"
#include "rocebench/collectives/verbs_transport.hpp"
#include "rocebench/common/errors.hpp"

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

}  // namespace

void add_transport_params(json& schema) {
  json& p = schema["properties"];
  p["transport"] = {{"enum", {"tcp", "verbs"}}};
  p["sockets_per_peer"] = {{"type", "integer"}, {"minimum", 1}, {"maximum", 16}};
  p["spin_us"] = {{"type", "integer"}, {"minimum", 0}, {"maximum", 10000}};
  p["tcp_congestion"] = {{"type", "string"}, {"minLength", 1}};
  p["tcp_sndbuf"] = {{"type", "integer"}, {"minimum", 0}, {"maximum", 1073741824}};
  p["verbs"] = verbs_params_schema();
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

void for_each_world_size(StepContext& ctx, const std::function<void(Transport&)>& body) {
  for_each_world_size(ctx, step_world_sizes(ctx), body);
}

void for_each_world_size(StepContext& ctx, const std::vector<int>& sizes, const std::function<void(Transport&)>& body) {
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

}  // namespace rocebench::collectives
