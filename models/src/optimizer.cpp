#include "rocebench/models/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace rocebench::models {

static double norm(std::span<const float> x) {
  double s = 0;
  for (float v : x) s += static_cast<double>(v) * v;
  return std::sqrt(s);
}

void sgd_update(ParamRole role, std::span<float> w, std::span<const float> g, std::span<float> velocity, double lr,
                const SgdOptions& options) {
  const bool layerwise = options.lars && role == ParamRole::weight;
  const double wd = options.lars && !layerwise ? 0.0 : options.weight_decay;
  double ratio = 1.0;
  if (layerwise) {
    const double wn = norm(w), gn = norm(g);
    if (wn > 0 && gn > 0) ratio = options.lars_eta * wn / (gn + wd * wn);
  }
  const auto m = static_cast<float>(options.momentum), r = static_cast<float>(ratio),
             decay = static_cast<float>(wd), step = static_cast<float>(lr);
  for (std::size_t i = 0; i < w.size(); ++i) {
    velocity[i] = m * velocity[i] + r * (g[i] + decay * w[i]);
    w[i] -= step * velocity[i];
  }
}

static double warmup(double base, double epoch, double warmup_epochs) {
  return warmup_epochs > 0 ? base * std::clamp(epoch / warmup_epochs, 0.0, 1.0) : base;
}

double ExponentialDecay::at(double epoch) const {
  if (epoch < warmup_epochs) return warmup(base, epoch, warmup_epochs);
  double periods = (epoch - warmup_epochs) / decay_epochs;
  if (staircase) periods = std::floor(periods);
  return base * std::pow(rate, periods);
}

double WarmupCosine::at(double epoch) const {
  if (epoch < warmup_epochs) return warmup(base, epoch, warmup_epochs);
  const double t = std::clamp((epoch - warmup_epochs) / (total_epochs - warmup_epochs), 0.0, 1.0);
  return 0.5 * base * (1 + std::cos(std::numbers::pi * t));
}

}  // namespace rocebench::models
