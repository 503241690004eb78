#pragma once
// One rank's training throughput, like tf_cnn_benchmarks: a fixed random batch, warm-up steps,
// then timed steps (forward, backward, SGD update); images/sec = batch × steps / time.
#include <cstdint>
#include <string>

#include "rocebench/common/options.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {

struct TrainConfig {
  std::string model = "resnet50";
  std::string engine = "cpu";
  std::string precision = "fp32";
  std::string layout = "blocked";  // cpu: oneDNN's preferred (blocked) layouts, or "plain" NCHW throughout
  int batch = 32;  // per rank
  int iters = 20;  // timed steps
  int warmup = 5;
  std::uint64_t seed = 1;
  // Images from this folder (DIR/<class>/<image>) through the data loader instead of a fixed
  // random batch; decoded on `loader_threads` threads with `prefetch` batches in flight.
  std::string data{};
  int loader_threads = 4;
  int prefetch = 2;
  bool profile = false;  // time every layer of the timed steps; the table goes to standard error
  int device = 0;        // gpu engine: GPU index (modulo the GPUs present); a step adds each rank's local rank
  std::string timeline{};  // replay engine: a shipped timeline's name or a results file (timeline.hpp)
};

// The options every training step shares (model, engine, timeline, precision, layout, batch, iters,
// warmup), declared once for both steps and for `rocebench train`'s flags.
const OptionTable& training_options();
// A training step's table: the shared options, then the step's own (`more`); the old 'steps' is
// refused with a hint naming 'iters'.
OptionTable training_table(const std::vector<OptionSpec>& more);
// A training step's params schema: its table's, with the model required (a plan names what it
// trains; only the flag has a default).
json training_schema(const OptionTable& table);
// The shared options of validated params (or a command line's), read into a config.
TrainConfig training_config_from(const json& params);

// The engine and its timeline agree: replay needs one, and the other engines would ignore one, so
// it is refused (InputError naming --timeline / plan field 'timeline'), never dropped in silence.
// `rocebench train` checks it before any rank starts; validate() checks it for plans.
void check_engine_timeline(const TrainConfig& config);

// Checks the config before anything is allocated: unknown model, engine or precision, bad counts,
// or a batch that does not fit in memory throw InputError naming what exists or what is needed.
void validate(const TrainConfig& config);

// Runs the measurement and returns the `models.train` record: params {model, engine, precision,
// batch, mode}, metrics {images_per_s, step_time_ms_p50, tflops, peak_memory_MiB}, samples = the
// per-step times in ms. An engine that cannot run here gives status skip with the reason.
// A plain layout adds {layout: "plain"} to params. With `data`, params add {input: "images", loader_threads, prefetch} and metrics add
// loader_images_per_s (the decoding pool's own throughput) and input_wait_ms_per_step (the mean
// time a timed step waited for its batch, included in the step time).
// TFLOP/s counts a training step as 3 × the forward FLOPs (forward, backward-data, backward-weights).
// With `profile`, samples add the per-step timeline (layers, update_ms: timeline.hpp) that the replay
// engine plays back. The replay engine adds {timeline} to params.
ResultRecord measure_training(const TrainConfig& config, int world);

// Per-layer time of the timed steps (Engine::layer_times() after the timed steps less before them,
// divided by `steps`): by op, then the slowest nodes, against the measured step time.
std::string layer_time_table(const Graph& graph, const std::vector<LayerTime>& before,
                             const std::vector<LayerTime>& after, int steps, double step_ms);

// "Name  params  gradient tensors  GFLOPs/image  input" for every zoo model.
std::string zoo_table();

}  // namespace rocebench::models
