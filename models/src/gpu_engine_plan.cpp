#include "gpu_engine_plan.hpp"

#include <fmt/format.h>

#include "gpu_engine_device.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench::models::gpu {

DType compute_dtype(Precision p) {
  switch (p) {
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
    case Precision::fp32:
    case Precision::tf32: return DType::f32;
  }
  return DType::f32;
}

int dtype_bytes(DType t) { return t == DType::f32 ? 4 : 2; }

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
  }
  return "?";
}

Nhwc packed(int batch, const Shape& s) { return {batch, s.c, s.h, s.w, s.c}; }

Nhwc channel_slice(const Nhwc& whole, int count) { return {whole.n, count, whole.h, whole.w, whole.pixel_stride}; }

std::vector<float> nchw_to_nhwc(std::span<const float> x, int batch, const Shape& s) {
  if (static_cast<std::int64_t>(x.size()) != s.size() * batch)
    throw std::invalid_argument(fmt::format("nchw_to_nhwc: {} values are not {} images", x.size(), batch));
  std::vector<float> y(x.size());
  const Nhwc layout = packed(batch, s);
  std::size_t i = 0;
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < s.c; ++c)
      for (int h = 0; h < s.h; ++h)
        for (int w = 0; w < s.w; ++w) y[static_cast<std::size_t>(layout.offset(b, c, h, w))] = x[i++];
  return y;
}

std::vector<float> nhwc_to_nchw(std::span<const float> x, int batch, const Shape& s) {
  if (static_cast<std::int64_t>(x.size()) != s.size() * batch)
    throw std::invalid_argument(fmt::format("nhwc_to_nchw: {} values are not {} images", x.size(), batch));
  std::vector<float> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    y[static_cast<std::size_t>(nhwc_to_nchw_index(static_cast<std::int64_t>(i), s.c, s.h, s.w))] = x[i];
  return y;
}

std::optional<std::array<std::int64_t, 4>> permuted_dims(const Graph& g, int param) {
  const Param& p = g.params().at(static_cast<std::size_t>(param));
  if (p.role != ParamRole::weight) return std::nullopt;
  const Node& n = g.node(p.node);
  if (n.op == Op::conv) return std::array{p.dims[0], p.dims[1], p.dims[2], p.dims[3]};
  const Shape in = g.node(n.inputs[0]).out;
  if (in.h == 1 && in.w == 1) return std::nullopt;  // [out][c] either way
  return std::array<std::int64_t, 4>{p.dims[0], in.c, in.h, in.w};
}

// [o][i][h][w] ↔ [o][h][w][i]; `to_device` picks the direction.
static std::vector<float> permute(const Graph& g, int param, std::span<const float> x, bool to_device) {
  const auto dims = permuted_dims(g, param);
  if (!dims) return {x.begin(), x.end()};
  const auto [o, in, kh, kw] = *dims;
  if (static_cast<std::int64_t>(x.size()) != o * in * kh * kw)
    throw std::invalid_argument(fmt::format("parameter {}: {} values, expected {}", param, x.size(), o * in * kh * kw));
  std::vector<float> y(x.size());
  for (std::int64_t a = 0; a < o; ++a)
    for (std::int64_t c = 0; c < in; ++c)
      for (std::int64_t h = 0; h < kh; ++h)
        for (std::int64_t w = 0; w < kw; ++w) {
          const auto graph_index = static_cast<std::size_t>(((a * in + c) * kh + h) * kw + w);
          const auto device_index = static_cast<std::size_t>(((a * kh + h) * kw + w) * in + c);
          if (to_device)
            y[device_index] = x[graph_index];
          else
            y[graph_index] = x[device_index];
        }
  return y;
}

std::vector<float> to_device_layout(const Graph& g, int param, std::span<const float> graph_layout) {
  return permute(g, param, graph_layout, true);
}

std::vector<float> to_graph_layout(const Graph& g, int param, std::span<const float> device_layout) {
  return permute(g, param, device_layout, false);
}

// Row-major matrices are column-major transposes: y[batch][out] is yᵀ (out × batch, ld out) to
// cuBLAS, W[out][in] is Wᵀ (in × out, ld in), x[batch][in] is xᵀ (in × batch, ld in).
Gemm linear_forward(int batch, int in, int out) {
  return {.trans_a = true, .trans_b = false, .m = out, .n = batch, .k = in, .lda = in, .ldb = in, .ldc = out};  // yᵀ = W · xᵀ
}
Gemm linear_backward_data(int batch, int in, int out) {
  return {.trans_a = false, .trans_b = false, .m = in, .n = batch, .k = out, .lda = in, .ldb = out, .ldc = in};  // dxᵀ = Wᵀ · dyᵀ
}
Gemm linear_backward_weights(int batch, int in, int out) {
  return {.trans_a = false, .trans_b = true, .m = in, .n = out, .k = batch, .lda = in, .ldb = out, .ldc = in};  // dWᵀ = xᵀ · dy
}

std::size_t ConvKeyHash::operator()(const ConvKey& k) const {
  std::size_t h = 0;
  auto mix = [&h](std::int64_t v) { h ^= std::hash<std::int64_t>{}(v) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2); };
  for (std::int64_t v : {std::int64_t{static_cast<int>(k.direction)}, std::int64_t{static_cast<int>(k.dtype)},
                         std::int64_t{static_cast<int>(k.precision)}, std::int64_t{k.device}, std::int64_t{k.n},
                         std::int64_t{k.c}, std::int64_t{k.h}, std::int64_t{k.w}, std::int64_t{k.k}, std::int64_t{k.r},
                         std::int64_t{k.s}, std::int64_t{k.pad_h}, std::int64_t{k.pad_w}, std::int64_t{k.stride_h},
                         std::int64_t{k.stride_w}, std::int64_t{k.groups}})
    mix(v);
  return h;
}

ConvKey conv_key(const Graph& g, int node, int batch, Precision p, ConvDirection d, int device) {
  const Node& n = g.node(node);
  if (n.op != Op::conv) throw std::logic_error(fmt::format("node {} is a {}, not a conv", node, to_string(n.op)));
  const Shape in = g.node(n.inputs[0]).out;
  const Window& w = n.window;
  return {.direction = d, .dtype = compute_dtype(p), .precision = p, .device = device, .n = batch, .c = in.c,
          .h = in.h, .w = in.w, .k = n.out.c, .r = w.kh, .s = w.kw, .pad_h = w.ph, .pad_w = w.pw,
          .stride_h = w.sh, .stride_w = w.sw, .groups = n.groups};
}

bool needs_output_gradient(const Graph& g, int node, bool input_gradient) {
  if (g.node(node).op == Op::softmax_ce) return false;
  if (node != g.input()) return true;
  if (input_gradient) return true;
  for (const Node& n : g.nodes())
    if (n.op == Op::batch_norm && n.inputs[0] == g.input()) return true;
  return false;
}

namespace {

// Hands out aligned offsets and counts bytes by kind.
struct Arena {
  std::int64_t end = 0;
  std::int64_t take(std::int64_t bytes, std::int64_t* kind = nullptr) {
    const std::int64_t at = (end + kAlignment - 1) / kAlignment * kAlignment;
    end = at + bytes;
    if (kind) *kind += bytes;
    return at;
  }
};

bool has_compute_copy(const Graph& g, const Param& p) {
  const Op op = g.node(p.node).op;
  return p.role == ParamRole::weight && (op == Op::conv || op == Op::linear);
}

}  // namespace

MemoryPlan plan_memory(const Graph& g, int batch, Precision p, bool input_gradient) {
  MemoryPlan plan;
  plan.dtype = compute_dtype(p);
  const std::int64_t elem = dtype_bytes(plan.dtype);
  const bool reduced = plan.dtype != DType::f32;
  Arena arena;
  std::int64_t largest_conv_weight = 0;
  for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
    const Node& n = g.node(i);
    NodeBuffers b;
    const std::int64_t bytes = n.out.size() * batch * elem;
    if (n.op != Op::softmax_ce) b.out = arena.take(bytes, &plan.activation_bytes);
    if (needs_output_gradient(g, i, input_gradient)) b.diff = arena.take(bytes, &plan.activation_bytes);
    if (n.op == Op::batch_norm) {
      b.saved = arena.take(2 * n.out.c * 4);
      b.running = arena.take(2 * n.out.c * 4);
    }
    if (n.op == Op::softmax_ce) {
      b.saved = arena.take(std::int64_t{batch} * g.classes() * 4);
      b.row_loss = arena.take(std::int64_t{batch} * 4);
    }
    plan.nodes.push_back(b);
  }
  for (const Param& param : g.params()) {
    ParamBuffers b;
    const std::int64_t bytes = param.size() * 4;
    b.master = arena.take(bytes, &plan.parameter_bytes);
    b.grad = arena.take(bytes, &plan.parameter_bytes);
    b.velocity = arena.take(bytes, &plan.parameter_bytes);
    if (reduced && has_compute_copy(g, param)) b.compute = arena.take(param.size() * elem, &plan.parameter_bytes);
    if (g.node(param.node).op == Op::conv && param.role == ParamRole::weight)
      largest_conv_weight = std::max(largest_conv_weight, param.size());
    plan.params.push_back(b);
  }
  plan.labels = arena.take(std::int64_t{batch} * 4);
  if (reduced) {
    plan.staging = arena.take(g.input_shape().size() * batch * 4);
    if (largest_conv_weight > 0) plan.weight_grad = arena.take(largest_conv_weight * elem);
  }
  plan.norms = arena.take(std::max<std::int64_t>(1, 2 * static_cast<std::int64_t>(g.params().size())) * 4);
  plan.loss_scale = arena.take(sizeof(LossScaleState));
  plan.total = (arena.end + kAlignment - 1) / kAlignment * kAlignment;
  return plan;
}

void check_fits(const Graph& g, int batch, const MemoryPlan& plan, std::int64_t workspace, std::int64_t free_bytes,
                std::int64_t total_bytes) {
  const std::int64_t needed = plan.total + workspace;
  if (needed <= free_bytes) return;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  throw InputError(fmt::format(
      "batch {} of {} does not fit on the GPU: it needs {:.2f} GiB ({:.2f} GiB activations and their gradients in "
      "{}, {:.2f} GiB weights, gradients, momentum and compute copies, {:.2f} GiB convolution workspace); "
      "{:.2f} GiB of {:.2f} GiB is free",
      batch, g.name(), static_cast<double>(needed) / kGiB, static_cast<double>(plan.activation_bytes) / kGiB,
      to_string(plan.dtype), static_cast<double>(plan.parameter_bytes) / kGiB, static_cast<double>(workspace) / kGiB,
      static_cast<double>(free_bytes) / kGiB, static_cast<double>(total_bytes) / kGiB));
}

}  // namespace rocebench::models::gpu
