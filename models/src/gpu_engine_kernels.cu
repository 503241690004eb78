// Elementwise and small reduction kernels of the gpu engine; the heavy layers are cuDNN and cuBLAS.
// Launch errors surface at the engine's next checked CUDA call (cudaGetLastError there).
#include "gpu_engine_kernels.hpp"

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace rocebench::models::gpu {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 1 ? 1 : blocks > 65535 ? 65535 : blocks);
}

__device__ inline float load(const float* p, std::int64_t i) { return p[i]; }
__device__ inline float load(const __half* p, std::int64_t i) { return __half2float(p[i]); }
__device__ inline float load(const __nv_bfloat16* p, std::int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void store(float* p, std::int64_t i, float v) { p[i] = v; }
__device__ inline void store(__half* p, std::int64_t i, float v) { p[i] = __float2half(v); }
__device__ inline void store(__nv_bfloat16* p, std::int64_t i, float v) { p[i] = __float2bfloat16(v); }

// Calls f(T* typed-null) with the element type of `t`: one switch instead of one per launcher.
template <class F>
void with_type(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(static_cast<float*>(nullptr)); break;
    case DType::f16: f(static_cast<__half*>(nullptr)); break;
    case DType::bf16: f(static_cast<__nv_bfloat16*>(nullptr)); break;
  }
}

#define GRID_STRIDE(i, n) \
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < (n); i += std::int64_t{blockDim.x} * gridDim.x)

template <class From, class To>
__global__ void cast_kernel(const From* x, To* y, std::int64_t n) {
  GRID_STRIDE(i, n) store(y, i, load(x, i));
}

template <class T>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t n) {
  GRID_STRIDE(i, n) store(y, i, load(a, i) + load(b, i));
}

template <class T>
__global__ void copy_kernel(const T* x, T* y, std::int64_t n, bool accumulate) {
  GRID_STRIDE(i, n) store(y, i, accumulate ? load(y, i) + load(x, i) : load(x, i));
}

template <class T>
__global__ void add_bias_kernel(T* y, const float* bias, std::int64_t n, int c) {
  GRID_STRIDE(i, n) store(y, i, load(y, i) + bias[i % c]);
}

// Column sums: 32 channels per block in x, kRows row-threads in y; each block adds its partial sums.
constexpr int kRows = 8;
template <class T>
__global__ void bias_gradient_kernel(const T* dy, std::int64_t rows, int c, float* db) {
  __shared__ float partial[kRows][32];
  const int channel = blockIdx.x * 32 + threadIdx.x;
  float sum = 0.f;
  if (channel < c)
    for (std::int64_t r = blockIdx.y * std::int64_t{kRows} + threadIdx.y; r < rows; r += std::int64_t{kRows} * gridDim.y)
      sum += load(dy, r * c + channel);
  partial[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && channel < c) {
    for (int k = 1; k < kRows; ++k) sum += partial[k][threadIdx.x];
    atomicAdd(db + channel, sum);
  }
}

// Nhwc's member functions are host code: kernels read its fields and get the element count.
__device__ inline float dropout_scale(const Nhwc& s, const DropoutMask& m, std::int64_t i) {
  const std::int64_t logical = nhwc_to_nchw_index(i, s.c, s.h, s.w);
  return dropout_keeps_hd(m.seed, m.pass, m.node, logical, m.p) ? 1.f / (1.f - m.p) : 0.f;
}

template <class T>
__global__ void dropout_forward_kernel(const T* x, T* y, std::int64_t n, Nhwc s, DropoutMask m) {
  GRID_STRIDE(i, n) store(y, i, load(x, i) * dropout_scale(s, m, i));
}

template <class T>
__global__ void dropout_backward_kernel(const T* dy, T* dx, std::int64_t n, Nhwc s, DropoutMask m, bool accumulate) {
  GRID_STRIDE(i, n) {
    const float d = load(dy, i) * dropout_scale(s, m, i);
    store(dx, i, accumulate ? load(dx, i) + d : d);
  }
}

// One thread per image: classes are at most a few thousand, the batch a few hundred.
template <class T>
__global__ void softmax_ce_forward_kernel(const T* logits, const int* labels, int batch, int classes, float* prob,
                                          float* row_loss) {
  const int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= batch) return;
  const T* z = logits + std::int64_t{b} * classes;
  float top = load(z, 0);
  for (int k = 1; k < classes; ++k) top = fmaxf(top, load(z, k));
  double sum = 0;
  for (int k = 0; k < classes; ++k) sum += exp(static_cast<double>(load(z, k) - top));
  for (int k = 0; k < classes; ++k)
    prob[std::int64_t{b} * classes + k] = static_cast<float>(exp(static_cast<double>(load(z, k) - top)) / sum);
  row_loss[b] = static_cast<float>(log(sum) - static_cast<double>(load(z, labels[b]) - top));
}

template <class T>
__global__ void softmax_ce_backward_kernel(const float* prob, const int* labels, int batch, int classes, float weight,
                                           const LossScaleState* state, T* d, bool accumulate) {
  const float scale = weight * (state ? state->scale : 1.f);
  GRID_STRIDE(i, std::int64_t{batch} * classes) {
    const auto b = static_cast<int>(i / classes);
    const auto k = static_cast<int>(i % classes);
    const float g = scale * (prob[i] - (k == labels[b] ? 1.f : 0.f));
    store(d, i, accumulate ? load(d, i) + g : g);
  }
}

__global__ void check_finite_kernel(const float* g, std::int64_t n, LossScaleState* state) {
  GRID_STRIDE(i, n) if (!isfinite(g[i])) state->overflow = 1;
}

__global__ void squared_norms_kernel(const float* w, const float* g, std::int64_t n, float* norms) {
  __shared__ float sw[kThreads], sg[kThreads];
  float a = 0.f, b = 0.f;
  GRID_STRIDE(i, n) {
    a += w[i] * w[i];
    b += g[i] * g[i];
  }
  sw[threadIdx.x] = a;
  sg[threadIdx.x] = b;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      sw[threadIdx.x] += sw[threadIdx.x + half];
      sg[threadIdx.x] += sg[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    atomicAdd(norms, sw[0]);
    atomicAdd(norms + 1, sg[0]);
  }
}

template <class T>
__global__ void sgd_kernel(float* w, const float* g, float* v, T* copy, std::int64_t n, SgdStep step,
                           const float* norms, const LossScaleState* state) {
  if (state && state->overflow) return;
  const float unscale = state ? 1.f / state->scale : 1.f;
  float ratio = 1.f;
  if (norms) {
    const float wn = sqrtf(norms[0]), gn = sqrtf(norms[1]) * unscale;
    if (wn > 0.f && gn > 0.f) ratio = step.lars_eta * wn / (gn + step.weight_decay * wn);
  }
  GRID_STRIDE(i, n) {
    v[i] = step.momentum * v[i] + ratio * (g[i] * unscale + step.weight_decay * w[i]);
    w[i] -= step.lr * v[i];
    if (copy) store(copy, i, w[i]);
  }
}

__global__ void finish_loss_scale_kernel(LossScaleState* state, LossScaleConfig config) {
  finish_loss_scale_step(*state, config);
}

}  // namespace

void cast(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream) {
  with_type(from, [&](auto* f) {
    with_type(to, [&](auto* t) {
      using From = std::remove_pointer_t<decltype(f)>;
      using To = std::remove_pointer_t<decltype(t)>;
      cast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const From*>(src), static_cast<To*>(dst), n);
    });
  });
}

void add(const void* a, const void* b, void* y, DType t, std::int64_t n, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                         static_cast<T*>(y), n);
  });
}

void copy_or_accumulate(const void* src, void* dst, DType t, std::int64_t n, bool accumulate, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    copy_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), n, accumulate);
  });
}

void add_bias(void* y, const float* bias, DType t, std::int64_t rows, int c, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    add_bias_kernel<<<blocks_for(rows * c), kThreads, 0, stream>>>(static_cast<T*>(y), bias, rows * c, c);
  });
}

void bias_gradient(const void* dy, DType t, std::int64_t rows, int c, float* db, cudaStream_t stream) {
  cudaMemsetAsync(db, 0, static_cast<std::size_t>(c) * sizeof(float), stream);
  const std::int64_t row_blocks = (rows + 255) / 256;
  const dim3 grid(static_cast<unsigned>((c + 31) / 32), static_cast<unsigned>(row_blocks > 1024 ? 1024 : row_blocks));
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    bias_gradient_kernel<<<grid, dim3(32, kRows), 0, stream>>>(static_cast<const T*>(dy), rows, c, db);
  });
}

void dropout_forward(const void* x, void* y, DType t, const Nhwc& shape, const DropoutMask& mask, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    dropout_forward_kernel<<<blocks_for(shape.elements()), kThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                                    static_cast<T*>(y), shape.elements(), shape, mask);
  });
}

void dropout_backward(const void* dy, void* dx, DType t, const Nhwc& shape, const DropoutMask& mask, bool accumulate,
                      cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    dropout_backward_kernel<<<blocks_for(shape.elements()), kThreads, 0, stream>>>(
        static_cast<const T*>(dy), static_cast<T*>(dx), shape.elements(), shape, mask, accumulate);
  });
}

void softmax_ce_forward(const void* logits, DType t, const int* labels, int batch, int classes, float* prob,
                        float* row_loss, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    softmax_ce_forward_kernel<<<(batch + 127) / 128, 128, 0, stream>>>(static_cast<const T*>(logits), labels, batch,
                                                                        classes, prob, row_loss);
  });
}

void softmax_ce_backward(const float* prob, const int* labels, int batch, int classes, float weight,
                         const LossScaleState* state, void* dlogits, DType t, bool accumulate, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    softmax_ce_backward_kernel<<<blocks_for(std::int64_t{batch} * classes), kThreads, 0, stream>>>(
        prob, labels, batch, classes, weight, state, static_cast<T*>(dlogits), accumulate);
  });
}

void check_finite(const float* g, std::int64_t n, LossScaleState* state, cudaStream_t stream) {
  check_finite_kernel<<<blocks_for(n), kThreads, 0, stream>>>(g, n, state);
}

void squared_norms(const float* w, const float* g, std::int64_t n, float* norms, cudaStream_t stream) {
  squared_norms_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, g, n, norms);
}

void sgd_update(float* w, const float* g, float* v, void* compute_copy, DType t, std::int64_t n, const SgdStep& step,
                const float* norms, const LossScaleState* state, cudaStream_t stream) {
  with_type(t, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    sgd_kernel<<<blocks_for(n), kThreads, 0, stream>>>(w, g, v, static_cast<T*>(compute_copy), n, step, norms, state);
  });
}

void finish_loss_scale(LossScaleState* state, const LossScaleConfig& config, cudaStream_t stream) {
  finish_loss_scale_kernel<<<1, 1, 0, stream>>>(state, config);
}

}  // namespace rocebench::models::gpu
