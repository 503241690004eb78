#include "rocebench/models/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::models {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

SyncMode mode_of(const std::string& algorithm) {
  return algorithm == "ps" ? SyncMode::ps : algorithm == "rd" ? SyncMode::rd : SyncMode::ring;
}

// A fabric of one rank a node whose node level costs `node` (α in ms, β in ms a byte): latency_us and
// nic_Gbps as node_cost reads them back (one rail, the whole line rate, no spine). The intra-node
// level costs nothing, as no mode uses it at one GPU a node.
Fabric one_rank_a_node(const std::string& name, LevelCost node, int servers) {
  Fabric f;
  f.name = name;
  f.gpus_per_node = 1;
  f.intra_GBps = kInfinity;
  f.intra_latency_us = 0;
  f.inter_latency_us = node.alpha_ms * 1e3;
  f.nic_Gbps = node.beta_ms_per_byte > 0 ? 8 * 1e-6 / node.beta_ms_per_byte : kInfinity;
  f.ps_servers = servers;
  return f;
}

// The model's time of `p` with α = 1 ms and β = 0, and with α = 0 and β = 1 ms a byte: allreduce_ms
// is α·A + β·B at one GPU a node, so these are the point's A and B.
std::pair<double, double> coefficients(const AllreducePoint& p) {
  const Placement placement{p.ranks, p.ranks, 1};
  const SyncMode mode = mode_of(p.algorithm);
  return {allreduce_ms(one_rank_a_node("unit", {1, 0}, p.servers), mode, placement, p.bytes),
          allreduce_ms(one_rank_a_node("unit", {0, 1}, p.servers), mode, placement, p.bytes)};
}

}  // namespace

LevelFit fit_level(const std::string& algorithm, const std::vector<AllreducePoint>& points, const std::string& what) {
  std::set<int> world_sizes;
  std::set<std::size_t> sizes;
  for (const AllreducePoint& p : points) {
    world_sizes.insert(p.ranks);
    sizes.insert(p.bytes);
  }
  if (points.empty()) throw InputError(fmt::format("{}: no {} allreduce records of more than one rank", what, algorithm));
  if (world_sizes.size() < 2)
    throw InputError(fmt::format("{}: {} allreduce at one world size only ({} ranks): alpha and beta per step need sweeps at "
                                 "two or more world sizes above one rank",
                                 what, algorithm, *world_sizes.begin()));
  if (sizes.size() < 2)
    throw InputError(fmt::format("{}: {} allreduce of one size only ({} bytes): alpha and beta need sweeps of two or more sizes",
                                 what, algorithm, *sizes.begin()));
  // β from the large sizes, α from the small ones, as perftest reports bandwidth and latency apart: one
  // fit of the relative error let the smallest sizes set β too, and a link that passes a short burst
  // above its rate (a shaper's bucket, a switch's buffer) then reads far faster than it carries a bucket.
  // First least squares of the absolute time (a point weighs by its length), which sets β ...
  double AA = 0, AB = 0, BB = 0, At = 0, Bt = 0;
  std::vector<std::pair<double, double>> rows;
  for (const AllreducePoint& p : points) {
    const auto [A, B] = coefficients(p);
    const double t = p.time_us / 1e3;
    AA += A * A, AB += A * B, BB += B * B, At += A * t, Bt += B * t;
    rows.push_back({A, B});
  }
  LevelFit fit;
  fit.algorithm = algorithm;
  fit.points = points;
  const double det = AA * BB - AB * AB;
  if (!(std::fabs(det) > 1e-12 * AA * BB))
    throw InputError(fmt::format("{}: {} allreduce: the records' step counts and bytes do not tell alpha from beta", what, algorithm));
  const bool alpha_below_zero = (At * BB - Bt * AB) / det < 0;  // then the best line through zero
  fit.node.beta_ms_per_byte = alpha_below_zero ? Bt / BB : (Bt * AA - At * AB) / det;
  // ... then, with β held, α from the squared relative error (a small point counts as much as a large one).
  double weight = 0, excess = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double t = points[i].time_us / 1e3, a = rows[i].first / t;
    weight += a * a;
    excess += a * (1 - fit.node.beta_ms_per_byte * rows[i].second / t);
  }
  fit.node.alpha_ms = excess / weight;
  if (fit.node.alpha_ms < 0) {  // a start-up cost below zero is noise: none
    fit.node.alpha_ms = 0;
    fit.alpha_clamped = true;
  }
  if (!(fit.node.beta_ms_per_byte > 0))
    throw InputError(fmt::format("{}: {} allreduce: time does not grow with bytes in the records (beta {:g} ms a byte)", what,
                                 algorithm, fit.node.beta_ms_per_byte));
  double squares = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const double us = 1e3 * (fit.node.alpha_ms * rows[i].first + fit.node.beta_ms_per_byte * rows[i].second);
    fit.fitted_us.push_back(us);
    const double relative = (us - points[i].time_us) / points[i].time_us;
    squares += relative * relative;
    fit.servers = std::max(fit.servers, points[i].servers);
  }
  fit.rms_relative = std::sqrt(squares / static_cast<double>(points.size()));
  return fit;
}

Fabric FabricFit::fabric_for(SyncMode mode) const {
  const auto own = std::find_if(fits.begin(), fits.end(), [&](const LevelFit& f) { return mode_of(f.algorithm) == mode && f.algorithm != "ring"; });
  const LevelFit& fit = own != fits.end() ? *own : fits.front();  // fits.front() is the ring's when there is one
  Fabric f = one_rank_a_node(fmt::format("fitted ({} allreduce of {})", fit.algorithm, fmt::join(runs, ", ")), fit.node, fit.servers);
  f.file = fmt::format("{}", fmt::join(runs, ","));
  f.document = {{"name", f.name},
                {"gpus_per_node", 1},
                {"ps_servers", f.ps_servers},
                {"intra_node", {{"fitted", false},
                                {"source", "not measured: the runs had one rank a node (emulated hosts), and no sync mode uses "
                                           "the level at one GPU a node"}}},
                {"inter_node", {{"nic_Gbps", f.nic_Gbps},
                                {"latency_us", f.inter_latency_us},
                                {"rails", 1},
                                {"achievable_share", 1},
                                {"spine_oversubscription", 1},
                                {"nodes_per_leaf", 1},
                                {"source", fmt::format("fitted to the {} allreduce records of {} ({}), relative RMS {:.3g}",
                                                       fit.algorithm, fmt::join(runs, ", "), transport, fit.rms_relative)}}}};
  return f;
}

json FabricFit::to_json() const {
  json out = {{"runs", runs}, {"transport", transport}, {"level", "node"}, {"gpus_per_node", 1},
              {"most_ranks_per_host", most_ranks_per_host}, {"fits", json::array()}};
  if (most_ranks_per_host > 1)
    out["note"] = fmt::format("up to {} ranks shared a host in the runs: the fitted level is the link between them "
                              "(loopback), taken as one rank a node",
                              most_ranks_per_host);
  for (const LevelFit& f : fits) {
    json points = json::array();
    for (std::size_t i = 0; i < f.points.size(); ++i) {
      const AllreducePoint& p = f.points[i];
      points.push_back({{"ranks", p.ranks}, {"bytes", p.bytes}, {"measured_us", p.time_us}, {"fitted_us", f.fitted_us[i]},
                        {"residual_us", f.fitted_us[i] - p.time_us}});
    }
    json fit = {{"algorithm", f.algorithm},
                {"alpha_us", f.node.alpha_ms * 1e3},
                {"beta_ns_per_byte", f.node.beta_ms_per_byte * 1e6},
                {"GBps", 1e-6 / f.node.beta_ms_per_byte},
                {"alpha_clamped", f.alpha_clamped},
                {"rms_relative", f.rms_relative},
                {"points", points}};
    if (f.algorithm == "ps") fit["servers"] = f.servers;
    out["fits"].push_back(fit);
  }
  return out;
}

std::vector<AllreducePoint> allreduce_points(const std::vector<json>& records) {
  std::vector<AllreducePoint> points;
  for (const json& r : records) {
    if (r.value("kind", "") != "result" || r.value("step", "") != "collectives.allreduce" || r.value("status", "") != "ok")
      continue;
    const json& params = r.contains("params") ? r["params"] : json::object();
    const json& metrics = r.contains("metrics") ? r["metrics"] : json::object();
    const std::string algorithm = params.value("algorithm", "");
    if (algorithm != "ring" && algorithm != "ps" && algorithm != "rd") continue;  // nccl: not one of the model's
    if (!params.contains("bytes") || !metrics.contains("time_us") || !metrics["time_us"].is_number()) continue;
    AllreducePoint p{algorithm, r.value("world", params.value("ranks", 1)), params["bytes"].get<std::size_t>(),
                     metrics["time_us"].get<double>(), params.value("servers", 1)};
    if (p.ranks > 1 && p.time_us > 0) points.push_back(p);
  }
  return points;
}

FabricFit fit_records(const std::vector<json>& records, const std::vector<std::string>& runs, const std::string& what) {
  FabricFit fit;
  fit.runs = runs;
  std::set<std::string> transports;
  for (const json& r : records) {
    if (r.value("kind", "") == "run" && r.contains("hosts") && r["hosts"].is_array())
      for (const json& h : r["hosts"])
        if (h.is_object() && h.contains("ranks") && h["ranks"].is_array())
          fit.most_ranks_per_host = std::max(fit.most_ranks_per_host, static_cast<int>(h["ranks"].size()));
    if (r.value("step", "") == "collectives.allreduce" && r.contains("params") && r["params"].contains("transport"))
      transports.insert(r["params"].value("transport", ""));
  }
  const std::vector<AllreducePoint> points = allreduce_points(records);
  if (points.empty())
    throw InputError(fmt::format("{}: no collectives.allreduce records of ring, ps or rd over more than one rank in {}", what,
                                 fmt::join(runs, ", ")));
  if (transports.size() > 1)
    throw InputError(fmt::format("{}: the runs' allreduce records are over {}: give runs of one transport", what,
                                 fmt::join(transports, " and ")));
  fit.transport = transports.empty() ? "" : *transports.begin();
  for (const std::string algorithm : {"ring", "ps", "rd"}) {
    std::vector<AllreducePoint> own;
    std::copy_if(points.begin(), points.end(), std::back_inserter(own), [&](const AllreducePoint& p) { return p.algorithm == algorithm; });
    if (!own.empty()) fit.fits.push_back(fit_level(algorithm, own, what));
  }
  return fit;
}

FabricFit fit_runs(const std::vector<std::string>& runs, const std::string& what) {
  std::vector<json> records;
  for (const std::string& run : runs) {
    std::filesystem::path file = run;
    std::error_code ec;
    if (std::filesystem::is_directory(file, ec)) file /= "results.jsonl";
    if (!std::filesystem::exists(file, ec))
      throw InputError(fmt::format("{}: run '{}': no such results file or folder with a results.jsonl", what, run));
    RecordFile read;
    try {
      read = read_records(file);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: run '{}': {}", what, run, e.what()));
    }
    if (allreduce_points(read.records).empty())
      throw InputError(fmt::format("{}: run '{}' holds no collectives.allreduce records of ring, ps or rd over more than one "
                                   "rank (rocebench allreduce makes them)",
                                   what, run));
    records.insert(records.end(), read.records.begin(), read.records.end());
  }
  return fit_records(records, runs, what);
}

}  // namespace rocebench::models
