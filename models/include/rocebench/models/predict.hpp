#pragma once
// `rocebench predict` and the models.predict plan step: a data-parallel step at world sizes never
// measured, played by the one step predictor (data_parallel.hpp) on a compute timeline, with each
// bucket's reduction timed by a fabric model (fabric.hpp) per sync mode. Records are predictions
// (engine "predicted"), never measurements.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/scaling_loss.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/models/calibrate.hpp"
#include "rocebench/models/data_parallel.hpp"
#include "rocebench/models/fabric.hpp"
#include "rocebench/models/timeline.hpp"

namespace rocebench::models {

// models.predict's options: the flags of `rocebench predict` and the fields of the plan step.
const OptionTable& predict_options();

// A timeline played at another device's measured speed: every node and the update scaled by one
// factor so that a step of `batch` images takes `step_ms` (from --step-ms, or batch / --images-per-s),
// and `label` says so ("cpu-resnet50-fp32-b2 scaled to 219 images/s"; "… as measured" unscaled).
struct ScaledTimeline {
  Timeline timeline;
  int batch = 0;
  double factor = 1;
  std::string label;
};

// What a prediction needs, read and checked: InputError naming the flag (`name_of` gives a key's
// flag on a command line, its field in a plan) for a timeline of another model, a batch the timeline
// was not measured at with no rate to scale it to, both rates at once, an unknown sync mode or a world
// size that is not whole nodes; both or neither of a fabric and runs to fit one from; runs that
// cannot identify a fit (calibrate.hpp).
//
// The timeline: --timeline's; else a shipped one of the model (a measured timeline always wins over a
// derived one); else one derived for --device (derived.hpp). A measured timeline with --device and no
// rate of its own runs at the device's derived step (its shape measured, its speed derived);
// `timeline_note` says which it is, for the console.
struct PredictInputs {
  std::string model, timeline_name;
  ScaledTimeline compute;
  std::string timeline_note;
  Fabric fabric;                 // --fabric, or the fit's ring fabric
  std::optional<FabricFit> fit;  // --fabric-from
  std::vector<SyncMode> modes;
  std::vector<Placement> placements;
  double bucket_mb = 25, first_bucket_mb = 1;
  double target_efficiency = 0.9;  // what the what-if at the largest world size aims at
  // The fabric a sync mode is played on: --fabric's, or the fit's for that mode.
  Fabric fabric_for(SyncMode mode) const { return fit ? fit->fabric_for(mode) : fabric; }
};
PredictInputs predict_inputs(const json& params, const std::function<std::string(const std::string&)>& name_of);
// The same on `fabric`, given rather than named (--fabric and --fabric-from are not read).
PredictInputs predict_inputs(const json& params, const std::function<std::string(const std::string&)>& name_of,
                             const Fabric& fabric);

// Every (world size, sync mode) of `inputs` as models.predict records, in sync-mode order.
std::vector<ResultRecord> predict_records(const PredictInputs& inputs);

// The what-if at one world size and sync mode (issue #42): the node NIC rate (rails × line rate, the
// rest of the fabric as it is) and, apart, the bucket size that reach `target` efficiency, each
// searched over the one predictor itself, never a second model. The step is no slower on a faster
// NIC, so the rate is the least that reaches the target, bisected and rounded up to 3 significant
// digits; an unlimited NIC that still misses it leaves `nic_Gbps_needed` empty (not reachable by link
// rate alone: the start-up costs, the links inside the node, compute the update waits for). Buckets
// are no such monotone knob (fewer buckets start fewer reductions but overlap less): the smallest of
// what_if_buckets_mb() that reaches the target, else the best of them.
struct WhatIf {
  SyncMode mode = SyncMode::ring;
  Placement placement;
  double target = 0;
  Prediction now;
  double efficiency = 0, nic_Gbps = 0;
  std::optional<double> nic_Gbps_needed;
  double efficiency_unlimited_nic = 0;
  std::optional<double> bucket_mb_needed;
  double best_bucket_mb = 0, best_bucket_efficiency = 0;
  ScalingLoss loss() const;  // the numbers its sentence is made of
};
WhatIf what_if(const PredictInputs& inputs, SyncMode mode, const Placement& placement, double target);
// The bucket sizes (MiB) the what-if tries, smallest first.
const std::vector<double>& what_if_buckets_mb();

// The console table of those records.
std::string predict_table(const PredictInputs& inputs, const std::vector<ResultRecord>& records);

StepKind predict_step_kind();
int predict_main(const Args& args);

}  // namespace rocebench::models
