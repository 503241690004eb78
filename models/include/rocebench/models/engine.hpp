#pragma once
// Engines execute a layer graph for one rank: forward, then backward in reverse order, announcing
// each parameter's gradient as soon as it is final, so a data-parallel trainer can start reducing
// it while backward continues. Chosen at run time by name ("cpu", "gpu").
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rocebench/models/graph.hpp"
#include "rocebench/models/optimizer.hpp"

namespace rocebench::models {

enum class Precision { fp32, tf32, bf16, fp16 };
const char* to_string(Precision p);
// Throws InputError listing the precisions that exist.
Precision parse_precision(const std::string& name);

struct EngineOptions {
  int batch = 32;
  Precision precision = Precision::fp32;
  std::uint64_t seed = 1;       // initial parameters and dropout masks
  bool input_gradient = false;  // also compute the gradient of the input images (gradient checks)
  bool plain_layout = false;    // cpu: keep every tensor NCHW instead of the blocked layouts oneDNN prefers
  float loss_scale = 65536.f;   // gpu fp16: the dynamic loss scale's starting value (torch's GradScaler's)
  bool profile = false;         // time every node's forward and backward (layer_times())
  int device = 0;               // gpu: GPU (device % count); a plan step passes the rank's local index
  // replay: the compute timeline to play back: a shipped one's name (models/timelines/) or a results
  // file holding a `train --profile` record (timeline.hpp).
  std::string timeline{};
};

// Time of one node's forward and backward summed over the steps synchronized so far, from
// EngineOptions::profile; node -1 is the optimizer's update.
struct LayerTime {
  int node = 0;
  double forward_ms = 0, backward_ms = 0;
};

// A parameter's gradient, final for this step. `data` is device memory when on_device: then the
// gradient is final once `event` (a cudaEvent_t) completes — a trainer waits on it from its own
// stream — and it is in the engine's layout (see gpu_engine_plan.hpp; elementwise reductions do not
// care) and, in fp16, multiplied by the loss scale, which update() divides out.
struct GradientReady {
  int param = 0;
  float* data = nullptr;
  std::int64_t count = 0;
  bool on_device = false;
  void* event = nullptr;
};
using GradientCallback = std::function<void(const GradientReady&)>;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual const Graph& graph() const = 0;
  virtual const EngineOptions& options() const = 0;

  // A batch of images (batch × C × H × W, NCHW) and their labels, copied in.
  virtual void set_batch(std::span<const float> images, std::span<const int> labels) = 0;
  virtual void forward() = 0;
  virtual void backward(const GradientCallback& ready) = 0;
  virtual void update(const SgdOptions& sgd, double lr) = 0;
  // Waits for queued work (a no-op on the CPU). Steps themselves never wait.
  virtual void synchronize() = 0;
  // The last forward's loss: Σ loss_weight · mean cross-entropy over the loss nodes.
  virtual double loss() = 0;

  // Host copies, for tests and checkpoints.
  virtual std::vector<float> parameter(int index) const = 0;
  virtual void set_parameter(int index, std::span<const float> values) = 0;
  virtual std::vector<float> gradient(int index) const = 0;
  virtual std::vector<float> input_gradient() const = 0;
  // Running mean and variance of a batch_norm node (momentum 0.1, unbiased variance, as torch).
  virtual std::pair<std::vector<float>, std::vector<float>> running_stats(int node) const = 0;

  // Bytes this engine allocated for activations, gradients, parameters and optimizer state.
  virtual std::int64_t bytes_allocated() const = 0;
  // With EngineOptions::profile; empty where the engine does not time layers.
  virtual std::vector<LayerTime> layer_times() const { return {}; }
};

// The engines this build knows, in the order --help lists them.
std::vector<std::string> engine_names();
// Bytes an engine will allocate for `graph` at `batch` (parameters ×3 for weights, gradients and
// momentum; every activation and its gradient; one scratch activation).
std::int64_t bytes_needed(const Graph& graph, int batch);
// Throws InputError for an unknown engine or precision, Unavailable (errors.hpp) when it cannot run here.
std::unique_ptr<Engine> make_engine(const std::string& name, const Graph& graph, const EngineOptions& options);

std::unique_ptr<Engine> make_cpu_engine(const Graph& graph, const EngineOptions& options);
// The precisions the cpu engine runs on this machine: fp32, and bf16 where oneDNN reports a CPU with
// bf16 instructions (avx512_bf16 or AMX).
std::vector<Precision> cpu_precisions();
std::unique_ptr<Engine> make_gpu_engine(const Graph& graph, const EngineOptions& options);
// A device gradient's trip through host memory, for data-parallel training of the gpu engine over
// host transports (as PAISoar's grpc baselines did): copy_to_host waits for the gradient's event,
// then copies it into `host`; copy_to_device copies averaged values back, and
// finish_copies_to_device waits until every such copy has landed (before the update reads them).
void copy_to_host(const GradientReady& gradient, float* host);
void copy_to_device(float* device, const float* host, std::int64_t count);
void finish_copies_to_device();
// Replays a measured compute timeline (each node's forward and backward time, the update's) as
// waits, with real-sized gradients that it announces as backward reaches their node, so that the
// communication half of data-parallel training runs for real on any machine while the compute
// follows the profile (what-if studies in the manner of Daydream and dPRO). It holds no weights
// and computes nothing: every gradient element is options.seed, so reductions can be checked
// exactly. Throws InputError when the timeline is not the graph's.
std::unique_ptr<Engine> make_replay_engine(const Graph& graph, const EngineOptions& options);

// The fixed random batch a rank trains on when it reads no data (tf_cnn_benchmarks' synthetic input):
// N(0, 1) images, then uniform labels, drawn from one mt19937 seeded with `seed`.
struct SyntheticBatch {
  std::vector<float> images;
  std::vector<int> labels;
};
SyntheticBatch synthetic_batch(const Graph& graph, int batch, std::uint32_t seed);

// Whether inverted dropout keeps element `index` of node `node` in forward pass number `pass`:
// a pure function of its arguments, so a reference implementation can draw the same mask.
bool dropout_keeps(std::uint64_t seed, std::uint64_t pass, int node, std::int64_t index, float p);

}  // namespace rocebench::models
