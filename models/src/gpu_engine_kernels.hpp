#pragma once
// The gpu engine's own CUDA kernels (gpu_engine_kernels.cu): what cuDNN and cuBLAS do not offer in
// the layout the engine keeps. Every launcher only enqueues on `stream`; none waits for the device.
// Activations are NHWC in the engine's compute dtype; parameters and their gradients are fp32.
#include <cstdint>

#include <cuda_runtime_api.h>

#include "gpu_engine_device.hpp"
#include "gpu_engine_plan.hpp"

namespace rocebench::models::gpu {

void cast(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream);
// y = a + b
void add(const void* a, const void* b, void* y, DType t, std::int64_t n, cudaStream_t stream);
// dst = src, or dst += src when `accumulate` (a gradient reaching a node from a second consumer)
void copy_or_accumulate(const void* src, void* dst, DType t, std::int64_t n, bool accumulate, cudaStream_t stream);
// y = max(x, 0); dx = dy where y > 0, or dx += that when `accumulate`
void relu_forward(const void* x, void* y, DType t, std::int64_t n, cudaStream_t stream);
void relu_backward(const void* y, const void* dy, void* dx, DType t, std::int64_t n, bool accumulate, cudaStream_t stream);
// y[row][c] += bias[c] for rows × c values, channels innermost (a conv's NHWC output, a linear's)
void add_bias(void* y, const float* bias, DType t, std::int64_t rows, int c, cudaStream_t stream);
// db[c] = Σ_rows dy[row][c]
void bias_gradient(const void* dy, DType t, std::int64_t rows, int c, float* db, cudaStream_t stream);

// Batch norm in training mode over an NHWC tensor of rows = N·H·W and c channels, as cuDNN's
// spatial mode and torch: normalized with the biased batch variance, running statistics updated
// with `momentum` and the unbiased one; saved_mean / saved_invstd (1/√(var + eps)) are what
// backward reads. `scratch` holds batch_norm_scratch_bytes(c) (the engine lends its workspace).
// Per-channel sums go through fixed-order partials, not atomics: the same input gives the same bits.
std::size_t batch_norm_scratch_bytes(int c);
struct BatchNormTensors {
  std::int64_t rows = 0;
  int c = 0;
  const float *gamma = nullptr, *beta = nullptr;
  float *saved_mean = nullptr, *saved_invstd = nullptr;
};
void batch_norm_forward(const void* x, void* y, DType t, const BatchNormTensors& bn, float eps, float momentum,
                        float* running_mean, float* running_var, void* scratch, cudaStream_t stream);
// dgamma = Σ dy·x̂, dbeta = Σ dy (overwritten); dx = γ/σ · (dy − (dbeta + x̂·dgamma)/rows), added to dx
// when `accumulate`; dx may be null (no gradient wanted).
void batch_norm_backward(const void* x, const void* dy, void* dx, DType t, const BatchNormTensors& bn, float* dgamma,
                         float* dbeta, bool accumulate, void* scratch, cudaStream_t stream);

// Inverted dropout of an NHWC tensor, the mask drawn by dropout_keeps_hd over NCHW indices.
struct DropoutMask {
  std::uint64_t seed = 0, pass = 0;
  int node = 0;
  float p = 0.f;
};
void dropout_forward(const void* x, void* y, DType t, const Nhwc& shape, const DropoutMask& mask, cudaStream_t stream);
void dropout_backward(const void* dy, void* dx, DType t, const Nhwc& shape, const DropoutMask& mask, bool accumulate,
                      cudaStream_t stream);

// prob = softmax(logits) per image; row_loss[b] = −log prob[b][label[b]].
void softmax_ce_forward(const void* logits, DType t, const int* labels, int batch, int classes, float* prob,
                        float* row_loss, cudaStream_t stream);
// dlogits = weight · scale · (prob − onehot(label)); scale is the loss scale (1 without `state`).
void softmax_ce_backward(const float* prob, const int* labels, int batch, int classes, float weight,
                         const LossScaleState* state, void* dlogits, DType t, bool accumulate, cudaStream_t stream);

// Sets state->overflow when any of g's n values is inf or NaN.
void check_finite(const float* g, std::int64_t n, LossScaleState* state, cudaStream_t stream);
// norms[0] += ‖w‖², norms[1] += ‖g‖² (zero them first).
void squared_norms(const float* w, const float* g, std::int64_t n, float* norms, cudaStream_t stream);

// sgd_update() of optimizer.cpp for one tensor on the device: d = g/scale + wd·w; v = m·v + ratio·d;
// w −= lr·v, then the compute copy (when given) is refreshed from w. `norms` (LARS) gives the trust
// ratio eta·‖w‖ / (‖g‖/scale + wd·‖w‖). With `state`, a step whose overflow flag is set does nothing.
struct SgdStep {
  float lr = 0.f, momentum = 0.f, weight_decay = 0.f, lars_eta = 0.f;
};
void sgd_update(float* w, const float* g, float* v, void* compute_copy, DType t, std::int64_t n, const SgdStep& step,
                const float* norms, const LossScaleState* state, cudaStream_t stream);
// Runs finish_loss_scale_step on the device, after the update kernels have read the flag.
void finish_loss_scale(LossScaleState* state, const LossScaleConfig& config, cudaStream_t stream);

}  // namespace rocebench::models::gpu
