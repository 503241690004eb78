#pragma once
// The gpu engine's device-free decisions, compiled in every build so they are unit-tested without a
// GPU: NHWC layouts and strides, the device layout of weights, the cuBLAS shapes of a linear layer,
// the convolution-algorithm cache key, and the memory plan (every buffer's offset in one arena).
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "rocebench/models/engine.hpp"

namespace rocebench::models::gpu {

// The element type activations and compute copies of weights are stored in. Master weights,
// their gradients and momentum are always fp32.
enum class DType { f32, f16, bf16 };
DType compute_dtype(Precision p);  // fp32 and tf32 compute on f32
int dtype_bytes(DType t);
const char* to_string(DType t);

// n images of c × h × w, channels innermost. A channel slice of a wider tensor (a concat input's
// place in the concat output) keeps the wider tensor's pixel stride. Strides count elements.
struct Nhwc {
  int n = 1, c = 1, h = 1, w = 1;
  int pixel_stride = 1;  // == c when packed
  std::int64_t n_stride() const { return std::int64_t{h} * w * pixel_stride; }
  std::int64_t h_stride() const { return std::int64_t{w} * pixel_stride; }
  std::int64_t w_stride() const { return pixel_stride; }
  static constexpr std::int64_t c_stride() { return 1; }
  std::int64_t elements() const { return std::int64_t{n} * c * h * w; }
  std::int64_t offset(int image, int channel, int y, int x) const {
    return image * n_stride() + y * h_stride() + x * w_stride() + channel;
  }
};
Nhwc packed(int batch, const Shape& s);
// `count` channels of `whole` starting at channel `first`: the view's data begins `first`
// elements into whole's.
Nhwc channel_slice(const Nhwc& whole, int count);

// Host-side layout changes of a batch of images (set_batch, input_gradient).
std::vector<float> nchw_to_nhwc(std::span<const float> x, int batch, const Shape& s);
std::vector<float> nhwc_to_nchw(std::span<const float> x, int batch, const Shape& s);

// The graph keeps conv and linear weights as torch does, [out][in][kh][kw] (a linear layer's `in`
// is its input's c × h × w). The device keeps them [out][kh][kw][in]: cuDNN's NHWC filter layout,
// and for a linear layer the order of its NHWC-flattened input. Other parameters are unpermuted.
// {out, in, kh, kw} of a permuted parameter; nullopt when the layouts agree.
std::optional<std::array<std::int64_t, 4>> permuted_dims(const Graph& g, int param);
std::vector<float> to_device_layout(const Graph& g, int param, std::span<const float> graph_layout);
std::vector<float> to_graph_layout(const Graph& g, int param, std::span<const float> device_layout);

// One column-major cuBLAS GEMM, C = op(A) · op(B) with C m × n and the inner dimension k.
struct Gemm {
  bool trans_a = false, trans_b = false;
  int m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
};
// A linear layer on row-major y[batch][out] = x[batch][in] · W[out][in]ᵀ:
Gemm linear_forward(int batch, int in, int out);        // A = W, B = x, C = y
Gemm linear_backward_data(int batch, int in, int out);  // A = W, B = dy, C = dx
Gemm linear_backward_weights(int batch, int in, int out);  // A = x, B = dy, C = dW

// What a cuDNN convolution algorithm is chosen for: everything its speed and correctness depend
// on (the descriptor's geometry, the tensor shapes, the data type and the math allowed).
enum class ConvDirection { forward, backward_data, backward_filter };
struct ConvKey {
  ConvDirection direction = ConvDirection::forward;
  DType dtype = DType::f32;
  Precision precision = Precision::fp32;
  int device = 0;
  int n = 0, c = 0, h = 0, w = 0;  // input
  int k = 0, r = 0, s = 0;         // output channels, kernel height and width
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, groups = 1;
  bool operator==(const ConvKey&) const = default;
};
struct ConvKeyHash {
  std::size_t operator()(const ConvKey& k) const;
};
ConvKey conv_key(const Graph& g, int node, int batch, Precision p, ConvDirection d, int device);

// Chosen algorithms by key: the first engine to meet a shape runs the (slow) search, every later
// conv of that shape — in any engine of the process — reuses its answer.
template <class Choice>
class AlgorithmCache {
 public:
  Choice get(const ConvKey& key, const std::function<Choice()>& search) {
    std::lock_guard lock(mutex_);
    auto it = chosen_.find(key);
    if (it == chosen_.end()) {
      it = chosen_.emplace(key, search()).first;
      ++searches_;
    }
    return it->second;
  }
  int searches() const {
    std::lock_guard lock(mutex_);
    return searches_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<ConvKey, Choice, ConvKeyHash> chosen_;
  int searches_ = 0;
};

// Every buffer of the engine, as byte offsets into one device allocation (256-byte aligned);
// -1 where a buffer does not exist. Activations and compute copies are in `dtype`.
struct NodeBuffers {
  std::int64_t out = -1, diff = -1;
  std::int64_t saved = -1;    // batch norm: mean and inverse std (2c floats); softmax: probabilities
  std::int64_t running = -1;  // batch norm: running mean and variance (2c floats)
  std::int64_t row_loss = -1; // softmax: each image's cross-entropy (batch floats)
};
struct ParamBuffers {
  std::int64_t master = -1, grad = -1, velocity = -1;  // fp32
  std::int64_t compute = -1;  // conv and linear weights in dtype, when dtype is not f32
};
struct MemoryPlan {
  DType dtype = DType::f32;
  std::vector<NodeBuffers> nodes;
  std::vector<ParamBuffers> params;
  std::int64_t labels = -1;            // batch ints
  std::int64_t staging = -1;           // the fp32 input batch before its cast, when dtype is not f32
  std::int64_t weight_grad = -1;       // a conv's weight gradient in dtype before its cast to fp32
  std::int64_t norms = -1;             // LARS: ‖w‖² and ‖g‖² per parameter
  std::int64_t loss_scale = -1;        // LossScaleState
  std::int64_t activation_bytes = 0;   // node outputs and their gradients
  std::int64_t parameter_bytes = 0;    // master, gradient, momentum and compute copies
  std::int64_t total = 0;              // the arena, alignment included
};
constexpr std::int64_t kAlignment = 256;
// Which nodes need the gradient of their output: every node but the loss heads, and the input
// only when asked for or when a batch norm reads it (cuDNN's batch norm backward always writes dx).
bool needs_output_gradient(const Graph& g, int node, bool input_gradient);
MemoryPlan plan_memory(const Graph& g, int batch, Precision p, bool input_gradient);

// Throws InputError when the plan and the convolution workspace do not fit in `free_bytes`,
// naming the model, the batch and the memory needed.
void check_fits(const Graph& g, int batch, const MemoryPlan& plan, std::int64_t workspace, std::int64_t free_bytes,
                std::int64_t total_bytes);

}  // namespace rocebench::models::gpu
