#include "rocebench/models/derived.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::models {

namespace {

// The share of the rated numbers a GPU step reaches, measured once by this project (models/README.md,
// one H200, ResNet-50 bf16 batch 256, `train --profile`, 2026-11-30): convolutions took 17.6 ms of
// the 54.57 ms step for 3 × 8.18 GFLOP × 256 images = 6.28 PFLOP, 357 TFLOP/s = 36% of 989.5; batch
// norm, ReLU, add and max pooling took 36.1 ms for the 90.6 GB this file's byte count gives them at
// batch 256 (bf16, forward and backward), 2.51 TB/s = 52% of 4.8 TB/s. Used for every GPU below: the
// same kernels, not measured on the others.
constexpr double kGpuComputeEfficiency = 0.36, kGpuMemoryEfficiency = 0.52;
constexpr const char* kGpuEfficiencySource =
    "measured by rocebench on one H200 (models/README.md, ResNet-50 bf16 batch 256, train --profile, 2026-11-30): "
    "convolutions 357 TFLOP/s = 36% of 989.5, batch norm/ReLU/add/pooling 52% of 4.8 TB/s; assumed alike on other GPUs";

}  // namespace

const std::vector<Device>& devices() {
  static const std::vector<Device> table = {
      {.name = "h100", .description = "NVIDIA H100 SXM5 80 GB", .precision = "bf16", .bytes_per_element = 2,
       .peak_tflops = 989.5, .memory_GBps = 3350,
       .rated_source = "NVIDIA H100 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity (989.5 dense), "
                       "GPU memory bandwidth 3.35 TB/s (SXM)",
       .compute_efficiency = kGpuComputeEfficiency, .memory_efficiency = kGpuMemoryEfficiency,
       .efficiency_source = kGpuEfficiencySource},
      {.name = "h200", .description = "NVIDIA H200 SXM 141 GB", .precision = "bf16", .bytes_per_element = 2,
       .peak_tflops = 989.5, .memory_GBps = 4800,
       .rated_source = "NVIDIA H200 Tensor Core GPU datasheet: BF16 Tensor Core 1,979 TFLOPS with sparsity (989.5 dense), "
                       "GPU memory bandwidth 4.8 TB/s (SXM)",
       .compute_efficiency = kGpuComputeEfficiency, .memory_efficiency = kGpuMemoryEfficiency,
       .efficiency_source = kGpuEfficiencySource},
      {.name = "a100", .description = "NVIDIA A100 SXM4 80 GB", .precision = "bf16", .bytes_per_element = 2,
       .peak_tflops = 312, .memory_GBps = 2039,
       .rated_source = "NVIDIA A100 Tensor Core GPU datasheet: BF16 Tensor Core 312 TFLOPS (624 with sparsity), "
                       "GPU memory bandwidth 2,039 GB/s (80 GB SXM)",
       .compute_efficiency = kGpuComputeEfficiency, .memory_efficiency = kGpuMemoryEfficiency,
       .efficiency_source = kGpuEfficiencySource},
      {.name = "p100", .description = "NVIDIA Tesla P100 SXM2 16 GB (NVLink)", .precision = "fp32", .bytes_per_element = 4,
       .peak_tflops = 10.6, .memory_GBps = 732,
       .rated_source = "NVIDIA Tesla P100 datasheet: single-precision 10.6 TFLOPS (NVLink version), CoWoS HBM2 732 GB/s",
       .compute_efficiency = kGpuComputeEfficiency, .memory_efficiency = kGpuMemoryEfficiency,
       .efficiency_source = kGpuEfficiencySource},
      {.name = "epyc-9654", .description = "AMD EPYC 9654, one socket (96 Zen 4 cores, 2.4 GHz base)", .precision = "fp32",
       .bytes_per_element = 4, .peak_tflops = 7.3728, .memory_GBps = 460.8,
       .rated_source = "AMD EPYC 9654 product page: 96 cores, 2.4 GHz base, 12 channels DDR5-4800 (460.8 GB/s); Zen 4 "
                       "retires two 256-bit FMAs a cycle: 96 x 2.4 GHz x 32 fp32 FLOP = 7.37 TFLOP/s",
       .compute_efficiency = 0.5, .memory_efficiency = 0.7,
       .efficiency_source = "assumed, not measured against this part: oneDNN's fp32 convolutions on AVX-512 reach about "
                            "half of peak, STREAM about 70% of DDR5's rated bandwidth"},
  };
  return table;
}

std::vector<std::string> device_names() {
  std::vector<std::string> names;
  for (const Device& d : devices()) names.push_back(d.name);
  return names;
}

const Device& device_named(const std::string& name, const std::string& what) {
  const auto& all = devices();
  const auto it = std::find_if(all.begin(), all.end(), [&](const Device& d) { return d.name == name; });
  if (it == all.end())
    throw InputError(fmt::format("{}: unknown device '{}' (one of {})", what, name, fmt::join(device_names(), ", ")));
  return *it;
}

DerivedTimeline derive_timeline(const Graph& graph, const Device& device, int batch) {
  const double element = device.bytes_per_element;
  const double flops_per_ms = device.peak_tflops * 1e9 * device.compute_efficiency;
  const double bytes_per_ms = device.memory_GBps * 1e6 * device.memory_efficiency;
  const auto roofline_ms = [&](double flops, double bytes) { return std::max(flops / flops_per_ms, bytes / bytes_per_ms); };
  DerivedTimeline d;
  d.timeline.model = graph.name();
  std::int64_t parameters = 0;
  for (int i = 1; i < static_cast<int>(graph.nodes().size()); ++i) {
    const Node& n = graph.node(i);
    DerivedLayer l;
    l.node = i;
    l.forward_flops = graph.forward_flops_per_image(i) * batch;
    l.backward_flops = 2 * l.forward_flops;
    double activations = static_cast<double>(n.out.size());  // written, then each input read
    for (int in : n.inputs) activations += static_cast<double>(graph.node(in).out.size());
    for (int p : n.params) l.gradient_params += graph.params()[static_cast<std::size_t>(p)].size();
    l.forward_bytes = element * (activations * batch + static_cast<double>(l.gradient_params));
    l.backward_bytes = 2 * l.forward_bytes;
    parameters += l.gradient_params;
    d.timeline.nodes.push_back({i, roofline_ms(l.forward_flops, l.forward_bytes), roofline_ms(l.backward_flops, l.backward_bytes)});
    d.layers.push_back(l);
  }
  d.update_bytes = 20.0 * static_cast<double>(parameters);
  d.timeline.update_ms = d.update_bytes / bytes_per_ms;
  d.timeline.source = {{"kind", "derived"},
                       {"device", device.name},
                       {"description", device.description},
                       {"precision", device.precision},
                       {"batch", batch},
                       {"peak_tflops", device.peak_tflops},
                       {"memory_GBps", device.memory_GBps},
                       {"rated_source", device.rated_source},
                       {"compute_efficiency", device.compute_efficiency},
                       {"memory_efficiency", device.memory_efficiency},
                       {"efficiency_source", device.efficiency_source},
                       {"roofline", "a node's time = max(FLOPs / (peak x compute_efficiency), bytes / (bandwidth x "
                                    "memory_efficiency)); backward 2x forward's FLOPs and bytes; update 20 bytes a parameter"}};
  return d;
}

}  // namespace rocebench::models
