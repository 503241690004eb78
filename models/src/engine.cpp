#include "rocebench/models/engine.hpp"

#include <random>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "gpu_engine_device.hpp"

namespace rocebench::models {

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
  }
  return "?";
}

Precision parse_precision(const std::string& name) {
  for (auto p : {Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16})
    if (name == to_string(p)) return p;
  throw InputError(fmt::format("unknown precision '{}'; precisions: fp32, tf32, bf16, fp16", name));
}

std::vector<std::string> engine_names() { return {"cpu", "gpu", "replay"}; }

std::int64_t bytes_needed(const Graph& graph, int batch) {
  std::int64_t largest = 0;
  for (const auto& n : graph.nodes()) largest = std::max(largest, n.out.size());
  return 4 * (3 * graph.parameter_count() + (graph.activation_floats_per_image() + largest) * batch);
}

std::unique_ptr<Engine> make_engine(const std::string& name, const Graph& graph, const EngineOptions& options) {
  if (name == "cpu") return make_cpu_engine(graph, options);
  if (name == "gpu") return make_gpu_engine(graph, options);
  if (name == "replay") return make_replay_engine(graph, options);
  throw InputError(fmt::format("unknown engine '{}'; engines: {}", name, fmt::join(engine_names(), ", ")));
}

SyntheticBatch synthetic_batch(const Graph& graph, int batch, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  SyntheticBatch b;
  b.images.resize(static_cast<std::size_t>(graph.input_shape().size() * batch));
  for (auto& v : b.images) v = normal(rng);
  b.labels.resize(static_cast<std::size_t>(batch));
  for (auto& l : b.labels) l = std::uniform_int_distribution<int>(0, graph.classes() - 1)(rng);
  return b;
}

bool dropout_keeps(std::uint64_t seed, std::uint64_t pass, int node, std::int64_t index, float p) {
  return gpu::dropout_keeps_hd(seed, pass, node, index, p);  // one hash for both engines
}

}  // namespace rocebench::models
