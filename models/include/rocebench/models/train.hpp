#pragma once
// One rank's training throughput, like tf_cnn_benchmarks: a fixed random batch, warm-up steps,
// then timed steps (forward, backward, SGD update); images/sec = batch × steps / time.
#include <cstdint>
#include <string>

#include "rocebench/common/record.hpp"

namespace rocebench::models {

struct TrainConfig {
  std::string model = "resnet50";
  std::string engine = "cpu";
  std::string precision = "fp32";
  int batch = 32;  // per rank
  int steps = 20;  // timed
  int warmup = 5;
  std::uint64_t seed = 1;
};

// Checks the config before anything is allocated: unknown model, engine or precision, bad counts,
// or a batch that does not fit in memory throw InputError naming what exists or what is needed.
void validate(const TrainConfig& config);

// Runs the measurement and returns the `models.train` record: params {model, engine, precision,
// batch, mode}, metrics {images_per_s, step_time_ms_p50, tflops, peak_memory_MiB}, samples = the
// per-step times in ms. An engine that cannot run here gives status skip with the reason.
// TFLOP/s counts a training step as 3 × the forward FLOPs (forward, backward-data, backward-weights).
ResultRecord measure_training(const TrainConfig& config, int world);

// "Name  params  gradient tensors  GFLOPs/image  input" for every zoo model.
std::string zoo_table();

}  // namespace rocebench::models
