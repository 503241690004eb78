#include "rocebench/common/scaling_loss.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace rocebench {

namespace {

std::optional<double> number_at(const nlohmann::json& metrics, const char* name) {
  const auto it = metrics.find(name);
  return it != metrics.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
}

// Three significant digits without an exponent: 0.412, 38.2, 160, 1240.
std::string digits(double x) { return x >= 100 ? fmt::format("{:.0f}", x) : fmt::format("{:.3g}", x); }

std::string percent(double ratio) { return digits(100 * ratio) + "%"; }

}  // namespace

std::string scaling_loss_text(const ScalingLoss& l) {
  std::string out = fmt::format("at {} GPUs: exposed allreduce {} ms of a {} ms step (efficiency {:.3f})", l.gpus,
                                digits(l.exposed_ms), digits(l.step_ms), l.efficiency);
  if (!l.target) return out;
  const std::string goal = percent(*l.target);
  const std::string over = l.one_node ? l.sync + " inside one node" : fmt::format("{} over {} Gbit/s", l.sync, digits(l.nic_Gbps));
  if (l.efficiency >= *l.target) {
    out += fmt::format("; {} already reaches {}", over, goal);
    return l.one_node || !l.nic_Gbps_needed ? out : out + fmt::format(" (and would down to {} Gbit/s per node)", digits(*l.nic_Gbps_needed));
  }
  const std::string bucket = l.bucket_mb_needed ? fmt::format("{:g} MiB buckets", *l.bucket_mb_needed) : "";
  const std::string best_bucket =
      l.best_bucket_mb ? fmt::format(" (best {:g} MiB: {:.3f})", *l.best_bucket_mb, l.best_bucket_efficiency.value_or(0)) : "";
  if (!l.one_node && l.nic_Gbps_needed) {
    return out + fmt::format("; {} needs {} Gbit/s per node{} for {}{}", over, digits(*l.nic_Gbps_needed),
                             bucket.empty() ? "" : " or " + bucket, goal,
                             bucket.empty() ? "; no bucket size reaches it" + best_bucket : "");
  }
  out += fmt::format("; {}: {} is not reachable by link rate alone", over, goal);
  if (l.one_node) out += " (no NIC is crossed)";
  else if (l.efficiency_unlimited_nic) out += fmt::format(" (an unlimited NIC gives {:.3f})", *l.efficiency_unlimited_nic);
  return out + (bucket.empty() ? ", nor by bucket size" + best_bucket : "; " + bucket + " reach it");
}

void add_what_if_metrics(const ScalingLoss& l, nlohmann::json& metrics) {
  if (!l.target) return;
  metrics["target_efficiency"] = *l.target;
  metrics["nic_Gbps_per_node"] = l.nic_Gbps;
  const auto put = [&](const char* name, const std::optional<double>& v) {
    if (v) metrics[name] = *v;
  };
  put("needed_nic_Gbps_per_node", l.nic_Gbps_needed);
  put("efficiency_unlimited_nic", l.efficiency_unlimited_nic);
  put("needed_bucket_mb", l.bucket_mb_needed);
  put("best_bucket_mb", l.best_bucket_mb);
  put("best_bucket_efficiency", l.best_bucket_efficiency);
}

std::optional<ScalingLoss> scaling_loss_of(int gpus, const std::string& sync, const nlohmann::json& m) {
  ScalingLoss l;
  l.target = number_at(m, "target_efficiency");
  const auto step = number_at(m, "step_time_ms"), exposed = number_at(m, "exposed_comm_ms"), efficiency = number_at(m, "efficiency");
  if (!l.target || !step || !exposed || !efficiency) return std::nullopt;
  l.gpus = gpus;
  l.sync = sync;
  l.step_ms = *step;
  l.exposed_ms = *exposed;
  l.efficiency = *efficiency;
  l.nic_Gbps = number_at(m, "nic_Gbps_per_node").value_or(0);
  l.one_node = number_at(m, "nodes").value_or(1) <= 1;
  l.nic_Gbps_needed = number_at(m, "needed_nic_Gbps_per_node");
  l.efficiency_unlimited_nic = number_at(m, "efficiency_unlimited_nic");
  l.bucket_mb_needed = number_at(m, "needed_bucket_mb");
  l.best_bucket_mb = number_at(m, "best_bucket_mb");
  l.best_bucket_efficiency = number_at(m, "best_bucket_efficiency");
  return l;
}

}  // namespace rocebench
