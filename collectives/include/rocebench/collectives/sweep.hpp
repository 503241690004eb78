#pragma once
// The size sweep of nccl-tests, written once: options, sizes, warm-up, timed iterations, the time
// per operation reduced across ranks (max), algbw / busbw, the check of every element, the table
// and the records. Each collective only says what is its own (CollectiveSpec).
#include <cstddef>
#include <string>
#include <vector>

#include "rocebench/collectives/algorithms.hpp"
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
  std::string name;  // allreduce, allgather, reduce_scatter
  // nccl-tests' bus bandwidth factor: busbw = algbw * factor(n).
  double (*bus_factor)(int ranks);
  // One operation, in place on the whole buffer of `count` elements.
  void (*run)(Transport& t, void* data, std::size_t count, const SweepConfig& config, const Deadline& deadline);
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
std::size_t run_sweep(StepContext& ctx, Transport& t, const CollectiveSpec& spec, const SweepConfig& config);

// Parses the step's params (validated against sweep_params_schema()).
SweepConfig sweep_config_from(const json& params);
json sweep_params_schema();

}  // namespace rocebench::collectives
