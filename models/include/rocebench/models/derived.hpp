#pragma once
// A compute timeline derived, not measured (issue #42): each node's forward and backward time from its
// own FLOPs and bytes on a named device's rated compute and memory bandwidth, as a roofline
// (time = max(FLOPs / (peak · compute efficiency), bytes / (bandwidth · memory efficiency))). What
// `rocebench predict` plays for a model with no measured timeline; a measured one always wins.
#include <cstdint>
#include <string>
#include <vector>

#include "rocebench/models/graph.hpp"
#include "rocebench/models/timeline.hpp"

namespace rocebench::models {

// A device as its datasheet rates it, and the share of those ratings a training step reaches, each
// with where it comes from.
struct Device {
  std::string name;         // --device
  std::string description;  // the exact part the ratings are of
  std::string precision;    // the arithmetic the rated compute is for (bf16, fp32)
  int bytes_per_element = 2;  // of an activation in that precision
  double peak_tflops = 0;     // dense, no sparsity
  double memory_GBps = 0;
  std::string rated_source;
  double compute_efficiency = 1;  // the share of peak_tflops convolutions and matrix products reach
  double memory_efficiency = 1;   // the share of memory_GBps elementwise layers reach
  std::string efficiency_source;
};

// The named devices, declared once (derived.cpp), in the order --device lists them.
const std::vector<Device>& devices();
std::vector<std::string> device_names();
// InputError naming `what` (the flag or field) and listing the devices for an unknown name.
const Device& device_named(const std::string& name, const std::string& what);

// One node's share of a derived step, per step of `batch` images.
struct DerivedLayer {
  int node = 0;
  double forward_flops = 0, backward_flops = 0;  // 2 × multiply-adds (graph.hpp's convention)
  double forward_bytes = 0, backward_bytes = 0;  // memory traffic
  std::int64_t gradient_params = 0;              // the parameters whose gradients this node produces
};

struct DerivedTimeline {
  Timeline timeline;  // source: {"kind": "derived", the device, its ratings and efficiencies, the batch}
  std::vector<DerivedLayer> layers;
  double update_bytes = 0;
};

// The timeline of one step of `batch` images of `graph` on `device`. Backward is twice forward's
// FLOPs (the input's gradient and the weights') and twice its bytes; the update is SGD with momentum
// on fp32 master weights (read weight, gradient, momentum; write weight, momentum: 20 bytes a
// parameter), memory-bound.
DerivedTimeline derive_timeline(const Graph& graph, const Device& device, int batch);

}  // namespace rocebench::models
