#pragma once
// The gpu engine's pieces that run both in its CUDA kernels and on the host, where the unit tests
// check them without a GPU: the dynamic loss scaler's state machine, the NHWC → NCHW element index,
// and the dropout mask's hash (the same draw as dropout_keeps(), so both engines drop alike).
#include <cstdint>

#if defined(__CUDACC__)
#define ROCEBENCH_HD __host__ __device__
#else
#define ROCEBENCH_HD
#endif

namespace rocebench::models::gpu {

// Dynamic loss scaling for fp16, as torch's GradScaler: backward starts from loss × scale; a step
// whose gradients hold an inf or NaN is skipped and the scale multiplied by `backoff`; after
// `growth_interval` good steps in a row the scale grows by `growth`, up to max_scale.
struct LossScaleConfig {
  float initial = 65536.f;
  float growth = 2.f;
  float backoff = 0.5f;
  int growth_interval = 2000;
  float min_scale = 1.f;  // below 1 an overflow is divergence, not range
  float max_scale = 16777216.f;
};

// Lives in device memory: the finite check sets `overflow`, the update kernels read it, and
// finish_loss_scale_step() runs last, on the device, so no step waits for the host.
struct LossScaleState {
  float scale = 1.f;
  int good_steps = 0;
  int overflow = 0;
  int skipped_steps = 0;
};

ROCEBENCH_HD inline LossScaleState initial_loss_scale(const LossScaleConfig& c) {
  LossScaleState s;
  s.scale = c.initial;
  return s;
}

ROCEBENCH_HD inline void finish_loss_scale_step(LossScaleState& s, const LossScaleConfig& c) {
  if (s.overflow) {
    s.scale = s.scale * c.backoff < c.min_scale ? c.min_scale : s.scale * c.backoff;
    s.good_steps = 0;
    ++s.skipped_steps;
  } else if (++s.good_steps >= c.growth_interval) {
    s.scale = s.scale * c.growth > c.max_scale ? c.max_scale : s.scale * c.growth;
    s.good_steps = 0;
  }
  s.overflow = 0;
}

// Element i of an NHWC tensor of n × c × h × w is this element of the same tensor in NCHW.
ROCEBENCH_HD inline std::int64_t nhwc_to_nchw_index(std::int64_t i, int c, int h, int w) {
  const std::int64_t channel = i % c;
  std::int64_t rest = i / c;
  const std::int64_t x = rest % w;
  rest /= w;
  const std::int64_t y = rest % h;
  const std::int64_t image = rest / h;
  return ((image * c + channel) * h + y) * w + x;
}

// The dropout draw of both engines (dropout_keeps() calls it on the host): splitmix64 of the
// coordinates, independent of thread count and evaluation order; `index` counts in NCHW order.
ROCEBENCH_HD inline bool dropout_keeps_hd(std::uint64_t seed, std::uint64_t pass, int node, std::int64_t index, float p) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (pass << 40) ^ (static_cast<std::uint64_t>(node) << 24) ^
                    static_cast<std::uint64_t>(index) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53 >= p;
}

}  // namespace rocebench::models::gpu
