#pragma once
// The size sweep of nccl-tests, written once: options, sizes, warm-up, timed iterations, the time
// per operation reduced across ranks (max), algbw / busbw, the check of every element, the table
// and the records. Each collective only says what is its own (CollectiveSpec).
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "rocebench/collectives/algorithms.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench::collectives {

struct SweepConfig {
  std::size_t min_bytes = 8, max_bytes = 32u << 20;
  int factor = 2;  // sizes grow by this factor
  int warmup = 5, iters = 20;
  bool check = true;
  bool in_place = true, out_of_place = true;
  DataType dtype = DataType::float32;
  ReduceOp op = ReduceOp::sum;
  Algorithm algorithm = Algorithm::ring;
  CollectiveOptions options;
};

struct CollectiveSpec {
  std::string name;  // allreduce, allgather, reduce_scatter: also names its bus bandwidth factor
  // One operation, in place on the whole buffer of `count` elements.
  void (*run)(transport::Transport& t, void* data, std::size_t count, const SweepConfig& config, const Deadline& deadline);
  // What rank r puts at element i before the operation (NaN: leave it zero).
  double (*input)(int rank, int ranks, std::size_t i, std::size_t count);
  // What element i must hold afterwards on rank r (NaN: not checked).
  double (*expected)(int rank, int ranks, std::size_t i, std::size_t count, ReduceOp op);
};

const CollectiveSpec& allreduce_spec();
const CollectiveSpec& allgather_spec();
const CollectiveSpec& reduce_scatter_spec();

// Sizes from min to max, multiplied by `factor`, each rounded down to whole elements (a multiple
// of the element size times `ranks`, so every rank's segment is whole) and at least one element
// per rank.
std::vector<std::size_t> sweep_sizes(const SweepConfig& config, int ranks);

// Runs the sweep on `t` (whose ranks are ctx's first t.world() ranks); rank 0 records one result
// per size and placement and prints the table; a rank that finds a wrong element records a fail
// naming its rank and the offset. Returns the number of wrong elements over all ranks.
std::size_t run_sweep(StepContext& ctx, transport::Transport& t, const CollectiveSpec& spec, const SweepConfig& config);

// The timing of one size, as nccl-tests takes it: each rank times its loop of back-to-back
// operations and the slowest rank's loop, over the iterations, is the time per operation. The mean
// of each iteration's slowest rank would be longer: ranks drift out of step from one operation to
// the next, and an iteration's slowest rank is seldom the next one's. Those per-iteration maxima
// stay as the samples, for the spread.
// Each rank appends its loop total to its per-iteration times (with_loop_total), the vector is
// max-reduced across ranks, and sweep_timing reads the result.
struct SweepTiming {
  double per_op_us;                // the slowest rank's loop time / iterations
  Summary slowest_per_iteration;   // each iteration's slowest rank
  // Metrics of a record: time_us (per op), time_us_p50 (median of the per-iteration maxima),
  // algbw_GBps, busbw_GBps.
  json metrics(std::size_t bytes, double bus_factor) const;
};
std::vector<double> with_loop_total(std::vector<double> iteration_us);
SweepTiming sweep_timing(std::span<const double> max_reduced_us);

// The sweep's options (with the transport's), the step's params schema, and their reader.
const OptionTable& sweep_options();
json sweep_params_schema();
SweepConfig sweep_config_from(const json& params);  // params validated against sweep_params_schema()

}  // namespace rocebench::collectives
