#pragma once
// Data-parallel training (PyTorch DDP's reducer): every rank trains the same model on its own
// batch; backward hands each gradient, as soon as it is final, to buckets that are averaged over
// the ranks on a communication thread while backward goes on; the update waits for the last one.
// models.scaling measures it at several world sizes and predicts each step time from a compute
// timeline, the bucket plan and an α + β·bytes cost of one bucket fitted in the same run.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "rocebench/collectives/buckets.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/models/engine.hpp"
#include "rocebench/models/timeline.hpp"

namespace rocebench::models {

// The parameters in the order backward makes their gradients final (last node first), and their
// sizes in elements: what a bucket plan is made from.
std::vector<int> params_in_ready_order(const Graph& graph);
std::vector<std::size_t> gradient_sizes(const Graph& graph);

// One training step of one rank, timed: forward, backward (buckets reduced meanwhile), the wait
// for the last bucket, the update. Times from now_ns().
struct StepTimes {
  std::int64_t start_ns = 0, forward_end_ns = 0, backward_end_ns = 0, reduced_ns = 0, end_ns = 0;
  std::vector<collectives::BucketTime> buckets;
  Timeline layers;  // this step's time per node, where the engine times its layers and the step is traced

  double step_ms() const { return static_cast<double>(end_ns - start_ns) / 1e6; }
  double forward_ms() const { return static_cast<double>(forward_end_ns - start_ns) / 1e6; }
  double backward_ms() const { return static_cast<double>(backward_end_ns - forward_end_ns) / 1e6; }
  double exposed_ms() const { return static_cast<double>(reduced_ns - backward_end_ns) / 1e6; }  // the wait
  double update_ms() const { return static_cast<double>(end_ns - reduced_ns) / 1e6; }
  double compute_ms() const { return step_ms() - exposed_ms(); }  // all but the wait for the others
  double comm_ms() const;  // every bucket's reduction, end to end
  // Of the exposed time, how long work ready for a thread waited for it: a bucket from when it was
  // sealed (or the one before it ended) to its start on the communication thread, and the reduced
  // gradients from the last bucket's end to the training thread's going on. Microseconds on idle
  // CPUs; with the CPUs shared, the wait for one.
  double handoff_ms() const;
};

class DataParallel {
 public:
  // `transport` null: one rank alone, nothing to reduce.
  DataParallel(Engine& engine, transport::Transport* transport, const collectives::BucketOptions& buckets,
               std::chrono::milliseconds deadline);
  StepTimes step(const SgdOptions& sgd, double lr);

 private:
  Engine& engine_;
  std::optional<collectives::GradientBuckets> buckets_;
  // The gpu engine's gradients on their way through host memory: a host copy per parameter, and
  // where each of this step's goes back to.
  std::map<int, std::vector<float>> host_copies_;
  std::vector<std::pair<int, float*>> device_gradients_;
};

// The time in ms of one bucket's reduction of `bytes` at one world size: what the predictor plays a
// step with, from a fit of this run's reductions (CostModel) or from a fabric model (fabric.hpp).
using BucketCost = std::function<double(std::size_t bytes)>;

// The time of one bucket's reduction: alpha + beta · bytes, fitted by least squares.
struct CostModel {
  double alpha_ms = 0, beta_ms_per_byte = 0;
  double at(std::size_t bytes) const { return alpha_ms + beta_ms_per_byte * static_cast<double>(bytes); }
  double operator()(std::size_t bytes) const { return at(bytes); }  // a BucketCost
};
CostModel fit_cost(std::span<const std::size_t> bytes, std::span<const double> ms);

// The bucket plan of `bucket_mb` (0: one bucket after backward) after a first of `first_bucket_mb`.
collectives::BucketOptions bucket_options(double bucket_mb, double first_bucket_mb);
// A size in MB as a plan writes it: 25, not 25.0.
json megabytes(double mb);

// The buckets a step of `graph` sends under `options`, in bytes, in order.
std::vector<std::size_t> bucket_plan(const Graph& graph, const collectives::BucketOptions& options);

// A step predicted from one rank's timeline: buckets are sealed when backward reaches their last
// gradient and reduced one after another on the communication thread; the update waits for the
// last. `other_ms` is what the single-rank step took beyond its timeline (the host's own work).
// The one predictor: models.scaling plays it with the costs it fitted at a measured world size,
// models.predict with a fabric's at any world size.
struct PredictedBucket {
  std::size_t bytes = 0;
  double sealed_ms = 0, start_ms = 0, end_ms = 0;  // from the step's start
};
struct Prediction {
  double step_ms = 0, comm_ms = 0, exposed_ms = 0;
  double compute_ms = 0;  // forward + backward + update + other_ms: the step with nothing to wait for
  double backward_end_ms = 0;
  // Where scaling is lost: the first bucket (1-based) still being reduced when backward ends; the
  // update waits for it and every bucket after it. 0: none, the update does not wait.
  std::size_t first_waited_bucket = 0;
  std::vector<PredictedBucket> buckets;
};
Prediction predict_step(const Graph& graph, const Timeline& compute, double other_ms,
                        const collectives::BucketOptions& options, const BucketCost& cost);

// "4 ranks on 2 CPUs of one machine (h0, h1, h2, h3)" when the ranks of `per_rank` (models.scaling's
// samples.per_rank: each rank's `machine`, its boot id, that machine's online `cpus`, and the
// `threads` it computes on, default 1) want more CPUs than their machine has, as emulated hosts on
// one VM do; empty when every rank's threads have CPUs of their own.
std::string ranks_sharing_cpus(const json& per_rank);

// Where a prediction beside a measurement missed (a models.scaling record with predicted_step_ms):
// the error split into compute (the ranks' measured forward + backward + update against the
// timeline's, predicted_compute_ms) and communication (exposed ms measured against predicted), and
// whether the two are comparable at all (not when ranks share CPUs: their compute grows with the
// world size, which the timeline of one rank cannot know). Adds metrics compute_error_ms,
// compute_error_pct, exposed_comm_error_ms, other_error_ms and samples.prediction {comparable,
// reason, ...}; returns the console's words for it. Where the record has the step's slowest compute
// (slowest_compute_ms) and the predictor's exposed time on the timeline at that speed
// (predicted_exposed_comm_at_slowest_compute_ms), the communication part is judged with the compute
// as measured too: the slowest rank's exposed time (slowest_exposed_comm_ms) against that prediction
// (exposed_comm_error_at_slowest_compute_ms, samples.prediction.at_slowest_compute, with the
// hand-offs). That part stays comparable when the ranks share CPUs.
std::string explain_prediction(ResultRecord& record);

// "rank 6 on host h6, the slowest in 7 of 10 steps" of a models.scaling record's samples.slowest_rank;
// "" without.
std::string slowest_rank_words(const json& slowest);

// models.scaling's own options (world sizes, bucket sync, learning rate …): with the training
// options and the transport's, the step's params; the ones with a flag are `rocebench train`'s too.
const OptionTable& data_parallel_options();

// The models.scaling plan step.
StepKind scaling_step();

}  // namespace rocebench::models
