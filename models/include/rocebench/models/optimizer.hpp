#pragma once
// SGD with momentum and weight decay (PyTorch's formulation), optional LARS, and the learning-rate
// schedules of large-batch training. Host code on spans: the CPU engine calls it per tensor.
#include <span>

#include "rocebench/models/graph.hpp"

namespace rocebench::models {

struct SgdOptions {
  double momentum = 0.9;
  double weight_decay = 1e-4;
  // LARS (You et al. 2017): each weight tensor's step is scaled by eta·‖w‖ / (‖g‖ + wd·‖w‖);
  // biases and batch-norm parameters take plain momentum SGD without weight decay, as in the paper.
  bool lars = false;
  double lars_eta = 0.001;
};

// One step on one tensor: d = g + wd·w; v = momentum·v + ratio·d; w -= lr·v.
void sgd_update(ParamRole role, std::span<float> w, std::span<const float> g, std::span<float> velocity, double lr,
                const SgdOptions& options);

// Linear warm-up from 0 over `warmup_epochs`, then base·rate^((epoch − warmup)/decay_epochs): the
// smooth exponential decay PAISoar used, or with `staircase` a drop every decay_epochs.
struct ExponentialDecay {
  double base = 0.1, warmup_epochs = 5, rate = 0.94, decay_epochs = 2;
  bool staircase = false;
  double at(double epoch) const;
};

// Linear warm-up from 0 over `warmup_epochs`, then half a cosine down to 0 at total_epochs.
struct WarmupCosine {
  double base = 0.1, warmup_epochs = 5, total_epochs = 90;
  double at(double epoch) const;
};

}  // namespace rocebench::models
