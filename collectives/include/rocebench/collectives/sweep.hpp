#pragma once
// The size sweep of nccl-tests, written once: options, sizes, warm-up, timed iterations, the time
// per operation reduced across ranks (max), algbw / busbw, the check of every element, the table
// and the records. Each collective only says what is its own (CollectiveShape: which blocks a rank
// sends and receives, what it must receive); each backend only moves the data (SweepBackend: our
// transports on host buffers and the host clock, NCCL on device buffers and CUDA events).
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

// Where one rank's data lies for one size, in elements of the whole buffer of `count` (nccl-tests'
// counts and offsets): the block it sends and the block it receives. Blocks are count / ranks.
struct Block {
  std::size_t offset, count;
};
struct Layout {
  std::size_t count, block;
  Block send, recv;
};

// What a collective is, whatever moves its data. Element i of the whole buffer starts as
// sweep_input(rank, i) on every rank (only the send block is sent).
struct CollectiveShape {
  std::string name;  // allreduce, allgather, … : also names its bus bandwidth factor
  Layout (*layout)(std::size_t count, int rank, int ranks);
  // What element i of the whole buffer (within the receive block) must hold afterwards on `rank`.
  double (*expected)(int rank, int ranks, std::size_t i, std::size_t count, ReduceOp op);
};
// allreduce, allgather, reduce_scatter, broadcast (from rank 0), alltoall; InputError for another name.
const CollectiveShape& collective_shape(const std::string& name);
// Small integers, exact in every type when summed over up to 128 ranks.
double sweep_input(int rank, std::size_t i);

// What moves the data of a sweep. run_sweep calls, for the largest size allocate(), then for each
// size: input() and commit_input(); for each placement start(), warm-up and timed run()s with mark()
// before the first timed one and after each, iteration_us(), a fresh start() and run() for an
// in-place check, reduce() of the times (max) and wrong counts (sum), and output().
class SweepBackend {
 public:
  virtual ~SweepBackend() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // The params that identify the series beside bytes, count, dtype, op, inplace and ranks.
  virtual json params() const = 0;
  // false: out of place only (separate send and receive buffers); the table then has no placement column.
  virtual bool runs_in_place() const = 0;
  virtual void allocate(std::size_t max_bytes) = 0;
  // Host memory for the send block (send.count elements), and its move to where run() reads it.
  virtual std::span<char> input(const Layout& l) = 0;
  virtual void commit_input(const Layout& l) = 0;
  // In place: the buffer run() works on holds the input again.
  virtual void start(const Layout& l, bool in_place) = 0;
  virtual void run(const Layout& l, bool in_place, const Deadline& deadline) = 0;
  virtual void mark() = 0;
  virtual std::vector<double> iteration_us() = 0;  // between consecutive marks, then forgets them
  virtual void reduce(std::span<double> values, ReduceOp op, const Deadline& deadline) = 0;  // across ranks, float64
  virtual std::span<const char> output(const Layout& l) = 0;  // the receive block, on the host
};

// One collective over one of our transports (tcp, verbs): the operation, in place on the whole
// buffer of `count` elements.
struct CollectiveSpec {
  std::string name;  // allreduce, allgather, reduce_scatter: its CollectiveShape
  void (*run)(transport::Transport& t, void* data, std::size_t count, const SweepConfig& config, const Deadline& deadline);
};

const CollectiveSpec& allreduce_spec();
const CollectiveSpec& allgather_spec();
const CollectiveSpec& reduce_scatter_spec();

// Sizes from min to max, multiplied by `factor`, each rounded down to whole elements (a multiple
// of the element size times `ranks`, so every rank's segment is whole) and at least one element
// per rank.
std::vector<std::size_t> sweep_sizes(const SweepConfig& config, int ranks);

// Runs the sweep on `backend` (whose ranks are ctx's first world() ranks); rank 0 records one result
// per size and placement and prints the table; a rank that finds a wrong element records a fail
// naming its rank and the offset. Returns the number of wrong elements over all ranks.
std::size_t run_sweep(StepContext& ctx, SweepBackend& backend, const CollectiveShape& shape, const SweepConfig& config);
// The same on `t`, with the host buffers and host clock of our transports.
std::size_t run_sweep(StepContext& ctx, transport::Transport& t, const CollectiveSpec& spec, const SweepConfig& config);

// The timing of one size, as nccl-tests takes it: each rank times its loop of back-to-back
// operations and the slowest rank's loop, over the iterations, is the time per operation. The mean
// of each iteration's slowest rank would be longer: ranks drift out of step from one operation to
// the next, and an iteration's slowest rank is seldom the next one's. The median operation is taken
// the same way, each rank's median and then the slowest rank's, for the same reason: the median of
// each iteration's slowest rank counts where in its loop a rank absorbed a stall, and a ring whose
// ranks go on with buffered bytes spreads one stall over several iterations (collectives/README.md).
// The per-iteration maxima stay as the samples, for the spread.
// Each rank appends its loop total and its median operation to its per-iteration times
// (with_loop_and_median), the vector is max-reduced across ranks, and sweep_timing reads the result.
struct SweepTiming {
  double per_op_us;                // the slowest rank's loop time / iterations
  double median_op_us;             // the slowest rank's median operation
  Summary slowest_per_iteration;   // each iteration's slowest rank
  // Metrics of a record: time_us (per op), time_us_p50 (median_op_us), algbw_GBps, busbw_GBps.
  json metrics(std::size_t bytes, double bus_factor) const;
};
std::vector<double> with_loop_and_median(std::vector<double> iteration_us);
SweepTiming sweep_timing(std::span<const double> max_reduced_us);

// The sweep's options (with the transport's), the step's params schema, and their reader.
const OptionTable& sweep_options();
json sweep_params_schema();
SweepConfig sweep_config_from(const json& params);  // params validated against sweep_params_schema()

}  // namespace rocebench::collectives
