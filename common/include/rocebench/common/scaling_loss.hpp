#pragma once
// Where data-parallel scaling is lost at one world size, in words, and what would win it back: the
// sentence `rocebench predict` prints under its table and the report prints under its figure, built
// here once from the numbers a models.predict record carries (issue #42).
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace rocebench {

struct ScalingLoss {
  int gpus = 0;
  std::string sync;  // "ring"
  double step_ms = 0, exposed_ms = 0, efficiency = 0;
  double nic_Gbps = 0;  // a node's NIC rate (all its rails), as the fabric gives it
  bool one_node = false;  // every rank inside one node: no NIC crossed
  // The what-if, when one was searched: the efficiency aimed at, the node rate that reaches it (none:
  // not reachable by link rate alone) with the efficiency an unlimited NIC would give, the smallest
  // bucket that reaches it, else the best bucket searched and its efficiency.
  std::optional<double> target;
  std::optional<double> nic_Gbps_needed, efficiency_unlimited_nic;
  std::optional<double> bucket_mb_needed, best_bucket_mb, best_bucket_efficiency;
};

// "at 128 GPUs: exposed allreduce 41 ms of a 160 ms step (efficiency 0.74); ring over 25 Gbit/s
// needs 38 Gbit/s per node or 50 MiB buckets for 90%".
std::string scaling_loss_text(const ScalingLoss& loss);

// The what-if's metrics as a models.predict record carries them (declared in models/shape.json):
// target_efficiency, nic_Gbps_per_node, needed_nic_Gbps_per_node, efficiency_unlimited_nic,
// needed_bucket_mb, best_bucket_mb, best_bucket_efficiency; absent ones were not found.
void add_what_if_metrics(const ScalingLoss& loss, nlohmann::json& metrics);
// A loss read back from a record's metrics (those above and step_time_ms, exposed_comm_ms,
// efficiency, nodes): none without a target_efficiency, the one metric every what-if records.
std::optional<ScalingLoss> scaling_loss_of(int gpus, const std::string& sync, const nlohmann::json& metrics);

}  // namespace rocebench
