// Elementwise and small reduction kernels of the gpu engine; the heavy layers are cuDNN and cuBLAS.
// Launch errors surface at the engine's next checked CUDA call (cudaGetLastError there).
#include "gpu_engine_kernels.hpp"

#include <cstdint>
#include <initializer_list>
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

// Elementwise kernels read and write 16-byte packs of V values where the size and the pointers
// allow (with_pack_width), else single values (V = 1).
template <class T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <class T, int V>
__device__ inline Pack<T, V> load_pack(const T* p, std::int64_t i) {
  return reinterpret_cast<const Pack<T, V>*>(p)[i];
}
template <class T, int V>
__device__ inline void store_pack(T* p, std::int64_t i, const Pack<T, V>& v) {
  reinterpret_cast<Pack<T, V>*>(p)[i] = v;
}

template <class T, int V>
__global__ void add_kernel(const T* a, const T* b, T* y, std::int64_t packs) {
  GRID_STRIDE(i, packs) {
    const Pack<T, V> pa = load_pack<T, V>(a, i), pb = load_pack<T, V>(b, i);
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) store(out.v, k, load(pa.v, k) + load(pb.v, k));
    store_pack(y, i, out);
  }
}

template <class T, int V>
__global__ void copy_kernel(const T* x, T* y, std::int64_t packs, bool accumulate) {
  GRID_STRIDE(i, packs) {
    Pack<T, V> out = load_pack<T, V>(x, i);
    if (accumulate) {
      const Pack<T, V> old = load_pack<T, V>(y, i);
#pragma unroll
      for (int k = 0; k < V; ++k) store(out.v, k, load(old.v, k) + load(out.v, k));
    }
    store_pack(y, i, out);
  }
}

template <class T, int V>
__global__ void relu_forward_kernel(const T* x, T* y, std::int64_t packs) {
  GRID_STRIDE(i, packs) {
    Pack<T, V> out = load_pack<T, V>(x, i);
#pragma unroll
    for (int k = 0; k < V; ++k) store(out.v, k, load(out.v, k) > 0.f ? load(out.v, k) : 0.f);
    store_pack(y, i, out);
  }
}

// dx (+)= dy where the output was positive.
template <class T, int V>
__global__ void relu_backward_kernel(const T* y, const T* dy, T* dx, std::int64_t packs, bool accumulate) {
  GRID_STRIDE(i, packs) {
    const Pack<T, V> out = load_pack<T, V>(y, i), grad = load_pack<T, V>(dy, i);
    Pack<T, V> result;
    if (accumulate) result = load_pack<T, V>(dx, i);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float d = load(out.v, k) > 0.f ? load(grad.v, k) : 0.f;
      store(result.v, k, accumulate ? load(result.v, k) + d : d);
    }
    store_pack(dx, i, result);
  }
}

// f(std::integral_constant<int, V>) with V = 16 bytes of T when `count` and every pointer allow it, else 1.
template <class T, class F>
void with_pack_width(std::int64_t count, std::initializer_list<const void*> pointers, F&& f) {
  constexpr int wide = 16 / static_cast<int>(sizeof(T));
  bool aligned = count % wide == 0;
  for (const void* p : pointers) aligned = aligned && reinterpret_cast<std::uintptr_t>(p) % 16 == 0;
  if (aligned)
    f(std::integral_constant<int, wide>{});
  else
    f(std::integral_constant<int, 1>{});
}

// f(T* null, std::integral_constant<int, V>) for t's element type and the pack width of with_pack_width.
template <class F>
void with_packed_type(DType t, std::int64_t count, std::initializer_list<const void*> pointers, F&& f) {
  with_type(t, [&](auto* typed) {
    with_pack_width<std::remove_pointer_t<decltype(typed)>>(count, pointers, [&](auto width) { f(typed, width); });
  });
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

// Batch norm. A tensor is read as packs of V consecutive channels (16 bytes when the channel
// count and the pointers allow, else V = 1). Reductions: a block of tx pack columns × ty
// row-threads strides the rows and leaves one partial per channel in partial[blockIdx.y][channel];
// a warp per channel combines them (lane l takes partials l, l + 32, … in order, then a fixed
// shuffle tree) and writes the coefficients the elementwise kernel applies. Moments use the thread's first value as a shift, then Chan's pairwise
// combination, so the variance does not suffer E[x²] − E[x]²'s cancellation.
constexpr int kBnMaxBlockRows = 1024;  // enough blocks to keep every SM streaming
constexpr int kBnThreads = 256;

struct Moments {
  float n, mean, m2;  // count, mean, Σ (x − mean)²
};

__device__ inline Moments combine(const Moments& a, const Moments& b) {
  if (b.n == 0.f) return a;
  if (a.n == 0.f) return b;
  const float n = a.n + b.n;
  const float d = b.mean - a.mean;
  return {n, a.mean + d * (b.n / n), a.m2 + b.m2 + d * d * (a.n * b.n / n)};
}

__device__ inline float2 combine(const float2& a, const float2& b) { return {a.x + b.x, a.y + b.y}; }

struct ReduceShape {
  dim3 block, grid;
};
ReduceShape reduce_shape(std::int64_t rows, int packs) {
  const int tx = packs < 32 ? packs : 32, ty = kBnThreads / tx;
  const std::int64_t block_rows = (rows + ty * 16 - 1) / (ty * 16);  // at least 16 rows per thread
  return {dim3(static_cast<unsigned>(tx), static_cast<unsigned>(ty)),
          dim3(static_cast<unsigned>((packs + tx - 1) / tx),
               static_cast<unsigned>(block_rows < 1 ? 1 : block_rows > kBnMaxBlockRows ? kBnMaxBlockRows : block_rows))};
}

// One pass over the rows for this thread's pack column: begin(first pack of x, first channel),
// add(x pack, dy pack) per row, end(acc) → the thread's V accumulators; then the block's threads
// of a column are combined in order into one partial per channel.
template <class T, int V, class Acc, class Begin, class Add, class End>
__device__ void reduce_rows(const T* x, const T* dy, std::int64_t rows, int c, Acc* partial, Begin begin, Add add,
                            End end) {
  __shared__ Acc share[kBnThreads * V];
  const int packs = c / V;
  const int pack = blockIdx.x * blockDim.x + threadIdx.x;
  const int me = threadIdx.y * blockDim.x + threadIdx.x;
  const std::int64_t first = blockIdx.y * std::int64_t{blockDim.y} + threadIdx.y;
  const auto* xs = reinterpret_cast<const Pack<T, V>*>(x);
  const auto* dys = reinterpret_cast<const Pack<T, V>*>(dy);
  Acc acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = Acc{};
  if (pack < packs && first < rows) {
    begin(xs[first * packs + pack], pack * V);
    for (std::int64_t r = first; r < rows; r += std::int64_t{blockDim.y} * gridDim.y)
      add(xs[r * packs + pack], dys ? dys[r * packs + pack] : Pack<T, V>{});
    end(acc);
  }
#pragma unroll
  for (int k = 0; k < V; ++k) share[me * V + k] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && pack < packs) {
    for (unsigned y = 1; y < blockDim.y; ++y)
#pragma unroll
      for (int k = 0; k < V; ++k) acc[k] = combine(acc[k], share[(y * blockDim.x + threadIdx.x) * V + k]);
#pragma unroll
    for (int k = 0; k < V; ++k) partial[blockIdx.y * std::int64_t{c} + pack * V + k] = acc[k];
  }
}

template <class T, int V>
__global__ void bn_moments_kernel(const T* x, std::int64_t rows, int c, Moments* partial) {
  float shift[V], s1[V], s2[V], n = 0.f;
  reduce_rows<T, V>(
      x, static_cast<const T*>(nullptr), rows, c, partial,
      [&](const Pack<T, V>& p, int) {
#pragma unroll
        for (int k = 0; k < V; ++k) shift[k] = load(p.v, k), s1[k] = 0.f, s2[k] = 0.f;
      },
      [&](const Pack<T, V>& p, const Pack<T, V>&) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float d = load(p.v, k) - shift[k];
          s1[k] += d;
          s2[k] += d * d;
        }
        n += 1.f;
      },
      [&](Moments* acc) {
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = {n, shift[k] + s1[k] / n, fmaxf(s2[k] - s1[k] * s1[k] / n, 0.f)};
      });
}

// partial[block row][channel] = (Σ dy, Σ dy·(x − mean)).
template <class T, int V>
__global__ void bn_gradient_sums_kernel(const T* x, const T* dy, std::int64_t rows, int c, const float* mean,
                                        float2* partial) {
  float mu[V], sum[V], dot[V];
  reduce_rows<T, V>(
      x, dy, rows, c, partial,
      [&](const Pack<T, V>&, int channel) {
#pragma unroll
        for (int k = 0; k < V; ++k) mu[k] = mean[channel + k], sum[k] = 0.f, dot[k] = 0.f;
      },
      [&](const Pack<T, V>& xp, const Pack<T, V>& gp) {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const float g = load(gp.v, k);
          sum[k] += g;
          dot[k] += g * (load(xp.v, k) - mu[k]);
        }
      },
      [&](float2* acc) {
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k] = {sum[k], dot[k]};
      });
}

__device__ inline Moments shuffle_down(const Moments& m, int delta) {
  return {__shfl_down_sync(0xffffffffu, m.n, delta), __shfl_down_sync(0xffffffffu, m.mean, delta),
          __shfl_down_sync(0xffffffffu, m.m2, delta)};
}
__device__ inline float2 shuffle_down(const float2& v, int delta) {
  return {__shfl_down_sync(0xffffffffu, v.x, delta), __shfl_down_sync(0xffffffffu, v.y, delta)};
}

// The channel this warp combines the partials of (kThreads / 32 channels per block), or -1.
__device__ inline int warp_channel(int c) {
  const int channel = static_cast<int>(blockIdx.x) * (kThreads / 32) + static_cast<int>(threadIdx.x) / 32;
  return channel < c ? channel : -1;
}

// All 32 lanes of the warp get their share of one channel's partials; lane 0 returns the total.
template <class Acc>
__device__ Acc combine_partials(const Acc* partial, int block_rows, int c, int channel) {
  const int lane = static_cast<int>(threadIdx.x) % 32;
  Acc acc{};
  for (int b = lane; b < block_rows; b += 32) acc = combine(acc, partial[b * std::int64_t{c} + channel]);
  for (int delta = 16; delta > 0; delta /= 2) acc = combine(acc, shuffle_down(acc, delta));
  return acc;
}

// Per channel: the batch statistics, the running ones, and y = x·scale + shift's coefficients.
__global__ void bn_statistics_kernel(const Moments* partial, int block_rows, BatchNormTensors bn, float eps,
                                     float momentum, float* running_mean, float* running_var, float* scale, float* shift) {
  const int ch = warp_channel(bn.c);
  if (ch < 0) return;  // whole warps: c is the same for every lane
  const Moments m = combine_partials(partial, block_rows, bn.c, ch);
  if (threadIdx.x % 32 != 0) return;
  const float rows = static_cast<float>(bn.rows);
  const float invstd = rsqrtf(m.m2 / rows + eps);
  bn.saved_mean[ch] = m.mean;
  bn.saved_invstd[ch] = invstd;
  running_mean[ch] = (1.f - momentum) * running_mean[ch] + momentum * m.mean;
  running_var[ch] = (1.f - momentum) * running_var[ch] + momentum * m.m2 / (rows > 1.f ? rows - 1.f : 1.f);
  scale[ch] = invstd * bn.gamma[ch];
  shift[ch] = bn.beta[ch] - m.mean * scale[ch];
}

// Per channel: dbeta, dgamma, and dx = a·(dy − b − (x − mean)·g)'s coefficients.
__global__ void bn_parameter_gradients_kernel(const float2* partial, int block_rows, BatchNormTensors bn, float* dgamma,
                                              float* dbeta, float* a, float* b, float* g) {
  const int ch = warp_channel(bn.c);
  if (ch < 0) return;
  const float2 sums = combine_partials(partial, block_rows, bn.c, ch);
  if (threadIdx.x % 32 != 0) return;
  const float invstd = bn.saved_invstd[ch], rows = static_cast<float>(bn.rows);
  dbeta[ch] = sums.x;
  dgamma[ch] = sums.y * invstd;
  a[ch] = bn.gamma[ch] * invstd;
  b[ch] = sums.x / rows;
  g[ch] = sums.y * invstd * invstd / rows;
}

template <class T, int V>
__global__ void bn_forward_kernel(const T* x, T* y, std::int64_t packs, int c, const float* scale, const float* shift) {
  GRID_STRIDE(i, packs) {
    const int channel = static_cast<int>(i * V % c);
    const Pack<T, V> in = reinterpret_cast<const Pack<T, V>*>(x)[i];
    Pack<T, V> out;
#pragma unroll
    for (int k = 0; k < V; ++k) store(out.v, k, load(in.v, k) * scale[channel + k] + shift[channel + k]);
    reinterpret_cast<Pack<T, V>*>(y)[i] = out;
  }
}

template <class T, int V>
__global__ void bn_backward_kernel(const T* x, const T* dy, T* dx, std::int64_t packs, int c, const float* mean,
                                   const float* a, const float* b, const float* g, bool accumulate) {
  GRID_STRIDE(i, packs) {
    const int channel = static_cast<int>(i * V % c);
    const Pack<T, V> xp = reinterpret_cast<const Pack<T, V>*>(x)[i], gp = reinterpret_cast<const Pack<T, V>*>(dy)[i];
    Pack<T, V> out;
    if (accumulate) out = reinterpret_cast<const Pack<T, V>*>(dx)[i];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int ch = channel + k;
      const float d = a[ch] * (load(gp.v, k) - b[ch] - (load(xp.v, k) - mean[ch]) * g[ch]);
      store(out.v, k, accumulate ? load(out.v, k) + d : d);
    }
    reinterpret_cast<Pack<T, V>*>(dx)[i] = out;
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
  with_packed_type(t, n, {a, b, y}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    add_kernel<T, V><<<blocks_for(n / V), kThreads, 0, stream>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                                 static_cast<T*>(y), n / V);
  });
}

void copy_or_accumulate(const void* src, void* dst, DType t, std::int64_t n, bool accumulate, cudaStream_t stream) {
  with_packed_type(t, n, {src, dst}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    copy_kernel<T, V><<<blocks_for(n / V), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst),
                                                                  n / V, accumulate);
  });
}

void relu_forward(const void* x, void* y, DType t, std::int64_t n, cudaStream_t stream) {
  with_packed_type(t, n, {x, y}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    relu_forward_kernel<T, V><<<blocks_for(n / V), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                          n / V);
  });
}

void relu_backward(const void* y, const void* dy, void* dx, DType t, std::int64_t n, bool accumulate, cudaStream_t stream) {
  with_packed_type(t, n, {y, dy, dx}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    relu_backward_kernel<T, V><<<blocks_for(n / V), kThreads, 0, stream>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), n / V, accumulate);
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

// The scratch: the partials, then four coefficients per channel.
std::size_t batch_norm_scratch_bytes(int c) {
  return (static_cast<std::size_t>(kBnMaxBlockRows) * sizeof(Moments) + 4 * sizeof(float)) * static_cast<std::size_t>(c);
}

namespace {
int warp_per_channel_blocks(int c) { return (c + kThreads / 32 - 1) / (kThreads / 32); }
float* bn_coefficients(void* scratch, int c) {
  return reinterpret_cast<float*>(static_cast<char*>(scratch) + static_cast<std::size_t>(kBnMaxBlockRows) * sizeof(Moments) * c);
}
}  // namespace

void batch_norm_forward(const void* x, void* y, DType t, const BatchNormTensors& bn, float eps, float momentum,
                        float* running_mean, float* running_var, void* scratch, cudaStream_t stream) {
  float* coef = bn_coefficients(scratch, bn.c);
  with_packed_type(t, bn.c, {x, y}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    const ReduceShape shape = reduce_shape(bn.rows, bn.c / V);
    auto* partial = static_cast<Moments*>(scratch);
    bn_moments_kernel<T, V><<<shape.grid, shape.block, 0, stream>>>(static_cast<const T*>(x), bn.rows, bn.c, partial);
    bn_statistics_kernel<<<warp_per_channel_blocks(bn.c), kThreads, 0, stream>>>(
        partial, static_cast<int>(shape.grid.y), bn, eps, momentum, running_mean, running_var, coef, coef + bn.c);
    const std::int64_t packs = bn.rows * bn.c / V;
    bn_forward_kernel<T, V><<<blocks_for(packs), kThreads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(y),
                                                                        packs, bn.c, coef, coef + bn.c);
  });
}

void batch_norm_backward(const void* x, const void* dy, void* dx, DType t, const BatchNormTensors& bn, float* dgamma,
                         float* dbeta, bool accumulate, void* scratch, cudaStream_t stream) {
  float* coef = bn_coefficients(scratch, bn.c);
  with_packed_type(t, bn.c, {x, dy, dx}, [&](auto* p, auto width) {
    using T = std::remove_pointer_t<decltype(p)>;
    constexpr int V = decltype(width)::value;
    const ReduceShape shape = reduce_shape(bn.rows, bn.c / V);
    auto* partial = static_cast<float2*>(scratch);
    bn_gradient_sums_kernel<T, V><<<shape.grid, shape.block, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), bn.rows, bn.c, bn.saved_mean, partial);
    bn_parameter_gradients_kernel<<<warp_per_channel_blocks(bn.c), kThreads, 0, stream>>>(
        partial, static_cast<int>(shape.grid.y), bn, dgamma, dbeta, coef, coef + bn.c, coef + 2 * bn.c);
    if (!dx) return;
    const std::int64_t packs = bn.rows * bn.c / V;
    bn_backward_kernel<T, V><<<blocks_for(packs), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), packs, bn.c, bn.saved_mean, coef,
        coef + bn.c, coef + 2 * bn.c, accumulate);
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
