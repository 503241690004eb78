// The gpu engine: cuDNN for convolution, batch norm, ReLU, pooling and concat (strided copies into
// the output's channel slices), cuBLAS for linear layers, the engine's own kernels for the rest
// (gpu_engine_kernels.cu). Activations are NHWC in the compute dtype (fp32 for fp32 and tf32, bf16,
// fp16); weights, their gradients and momentum are fp32 masters, with bf16/fp16 copies for compute.
// forward(), backward() and update() only enqueue work on the engine's stream: no step waits for
// the device. loss(), synchronize() and the host copies do.
#include <cstring>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <fmt/format.h>

#include "gpu_engine_kernels.hpp"
#include "gpu_engine_plan.hpp"
#include "rocebench/common/cublas.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {
namespace gpu {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw InfraError(fmt::format("engine gpu: {}: {}", what, cudaGetErrorString(e)));
}
void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw InfraError(fmt::format("engine gpu: {}: {}", what, cudnnGetErrorString(s)));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw InfraError(fmt::format("engine gpu: {}: {}", what, cublas::api().status_string(s)));
}
#define CHECK(call) check((call), #call)

// A cuDNN descriptor, created with its object and destroyed with it.
template <class H, auto Create, auto Destroy>
class Descriptor {
 public:
  Descriptor() { check(Create(&h_), "create a cuDNN descriptor"); }
  Descriptor(Descriptor&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Descriptor& operator=(Descriptor&&) = delete;
  ~Descriptor() {
    if (h_) Destroy(h_);
  }
  operator H() const { return h_; }

 private:
  H h_ = nullptr;
};
using TensorDesc = Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDesc = Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor, cudnnDestroyPoolingDescriptor>;

// Owners of the runtime's handles, so a constructor that throws half-way leaks nothing.
template <auto Destroy>
struct Deleter {
  template <class P>
  void operator()(P* p) const {
    Destroy(p);
  }
};
using Stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, Deleter<cudaStreamDestroy>>;
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, Deleter<cudaEventDestroy>>;
using Cudnn = std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, Deleter<cudnnDestroy>>;
void destroy_cublas(cublasHandle_t h) { cublas::api().destroy(h); }
using Cublas = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, Deleter<destroy_cublas>>;
struct DeviceFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DeviceMemory = std::unique_ptr<std::byte, DeviceFree>;

cudnnDataType_t cudnn_type(DType t) {
  return t == DType::f32 ? CUDNN_DATA_FLOAT : t == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}
cudaDataType_t cuda_type(DType t) { return t == DType::f32 ? CUDA_R_32F : t == DType::f16 ? CUDA_R_16F : CUDA_R_16BF; }

void describe(cudnnTensorDescriptor_t d, DType t, const Nhwc& s) {
  if (s.pixel_stride == s.c)
    CHECK(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NHWC, cudnn_type(t), s.n, s.c, s.h, s.w));
  else
    CHECK(cudnnSetTensor4dDescriptorEx(d, cudnn_type(t), s.n, s.c, s.h, s.w, static_cast<int>(s.n_stride()),
                                       static_cast<int>(Nhwc::c_stride()), static_cast<int>(s.h_stride()),
                                       static_cast<int>(s.w_stride())));
}

// A convolution algorithm as chosen by cudnnFind for one ConvKey.
struct ConvChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t workspace = 0;
};

AlgorithmCache<ConvChoice>& conv_algorithms() {
  static AlgorithmCache<ConvChoice> cache;
  return cache;
}

// The fastest measured algorithm that succeeded within the workspace limit. fp32 keeps to FMA
// math: cuDNN's default math would let Ampere and later chips run it as TF32.
template <class Perf>
ConvChoice fastest(const Perf* results, int count, std::size_t limit, bool strict_fp32, const char* direction) {
  for (int i = 0; i < count; ++i) {
    const Perf& r = results[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > limit) continue;
    if (strict_fp32 && (r.mathType == CUDNN_TENSOR_OP_MATH || r.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION))
      continue;
    return {static_cast<int>(r.algo), strict_fp32 ? CUDNN_FMA_MATH : r.mathType, r.memory};
  }
  throw InfraError(fmt::format("engine gpu: no {} convolution algorithm runs within {} MiB of workspace", direction,
                               limit >> 20));
}

constexpr float kOne = 1.f, kZero = 0.f;

class GpuEngine final : public Engine {
 public:
  GpuEngine(const Graph& graph, const EngineOptions& options)
      : graph_(graph), options_(options), dtype_(compute_dtype(options.precision)) {
    CHECK(cudaGetDevice(&device_));
    cudaStream_t stream = nullptr;
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    stream_.reset(stream);
    cudnnHandle_t cudnn = nullptr;
    CHECK(cudnnCreate(&cudnn));
    cudnn_.reset(cudnn);
    CHECK(cudnnSetStream(cudnn_.get(), stream_.get()));
    cublasHandle_t cublas = nullptr;
    CHECK(cublas::api().create(&cublas));
    cublas_.reset(cublas);
    CHECK(cublas::api().set_stream(cublas_.get(), stream_.get()));

    plan_ = plan_memory(graph_, options_.batch, options_.precision, options_.input_gradient);
    std::size_t free = 0, total = 0;
    CHECK(cudaMemGetInfo(&free, &total));
    check_fits(graph_, options_.batch, plan_, 0, static_cast<std::int64_t>(free), static_cast<std::int64_t>(total));
    // The workspace may take half of what the buffers leave, at most 4 GiB.
    const auto left = static_cast<std::int64_t>(free) - plan_.total;
    workspace_limit_ = static_cast<std::size_t>(std::min<std::int64_t>(left / 2, std::int64_t{4} << 30));

    nodes_.reserve(graph_.nodes().size());
    for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) describe_node(i);
    allocate();
    initialize();
  }

  const Graph& graph() const override { return graph_; }
  const EngineOptions& options() const override { return options_; }

  void set_batch(std::span<const float> images, std::span<const int> labels) override {
    const Shape in = graph_.input_shape();
    if (static_cast<std::int64_t>(images.size()) != in.size() * options_.batch ||
        static_cast<int>(labels.size()) != options_.batch)
      throw std::invalid_argument("set_batch: sizes do not match the batch");
    for (int l : labels)
      if (l < 0 || l >= graph_.classes())
        throw std::invalid_argument(fmt::format("set_batch: label {} is not in [0, {})", l, graph_.classes()));
    const std::vector<float> nhwc = nchw_to_nhwc(images, options_.batch, in);
    float* dst = static_cast<float*>(dtype_ == DType::f32 ? out(0) : at(plan_.staging));
    CHECK(cudaMemcpyAsync(dst, nhwc.data(), nhwc.size() * 4, cudaMemcpyHostToDevice, stream()));
    if (dtype_ != DType::f32)
      cast(dst, DType::f32, out(0), dtype_, static_cast<std::int64_t>(nhwc.size()), stream());
    CHECK(cudaMemcpyAsync(at(plan_.labels), labels.data(), labels.size() * sizeof(int), cudaMemcpyHostToDevice,
                          stream()));
    synchronize();  // the host vectors go away on return
  }

  void forward() override {
    for (int i = 1; i < static_cast<int>(graph_.nodes().size()); ++i) timed(forward_spans_, i, [&] { forward_node(i); });
    CHECK(cudaGetLastError());
    ++pass_;
  }

  void backward(const GradientCallback& ready) override {
    std::fill(written_.begin(), written_.end(), false);
    for (int i = static_cast<int>(graph_.nodes().size()) - 1; i > 0; --i) {
      timed(backward_spans_, i, [&] { backward_node(i); });
      for (int p : graph_.node(i).params) {
        if (loss_scale()) check_finite(grad(p), count(p), loss_scale(), stream());
        cudaEvent_t event = grad_ready_[static_cast<std::size_t>(p)].get();
        CHECK(cudaEventRecord(event, stream()));
        if (ready) ready({p, grad(p), count(p), true, event});
      }
    }
    CHECK(cudaGetLastError());
  }

  void update(const SgdOptions& sgd, double lr) override {
    timed(update_span_, 0, [&] { update_parameters(sgd, lr); });
  }

  void update_parameters(const SgdOptions& sgd, double lr) {
    float* norms = static_cast<float*>(at(plan_.norms));
    if (sgd.lars) CHECK(cudaMemsetAsync(norms, 0, graph_.params().size() * 2 * sizeof(float), stream()));
    for (int p = 0; p < static_cast<int>(graph_.params().size()); ++p) {
      // The same per-tensor choices as sgd_update() on the host.
      const bool layerwise = sgd.lars && graph_.params()[static_cast<std::size_t>(p)].role == ParamRole::weight;
      const double decay = sgd.lars && !layerwise ? 0.0 : sgd.weight_decay;
      float* tensor_norms = layerwise ? norms + 2 * p : nullptr;
      if (tensor_norms) squared_norms(master(p), grad(p), count(p), tensor_norms, stream());
      const SgdStep step{static_cast<float>(lr), static_cast<float>(sgd.momentum), static_cast<float>(decay),
                         static_cast<float>(sgd.lars_eta)};
      sgd_update(master(p), grad(p), velocity(p), at(param_buffers(p).compute), dtype_, count(p), step, tensor_norms,
                 loss_scale(), stream());
    }
    if (loss_scale()) finish_loss_scale(loss_scale(), scaler_, stream());
    CHECK(cudaGetLastError());
  }

  void synchronize() override {
    CHECK(cudaStreamSynchronize(stream()));
    for (auto* spans : {&forward_spans_, &backward_spans_, &update_span_})
      for (Span& span : *spans) span.collect();
  }

  std::vector<LayerTime> layer_times() const override {
    std::vector<LayerTime> times;
    if (forward_spans_.empty()) return times;
    for (std::size_t i = 1; i < forward_spans_.size(); ++i)
      times.push_back({static_cast<int>(i), forward_spans_[i].ms, backward_spans_[i].ms});
    times.push_back({-1, 0, update_span_[0].ms});
    return times;
  }

  double loss() override {
    synchronize();
    double total = 0;
    std::vector<float> rows(static_cast<std::size_t>(options_.batch));
    for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
      const Node& nd = graph_.node(i);
      if (nd.op != Op::softmax_ce) continue;
      CHECK(cudaMemcpy(rows.data(), at(plan_.nodes[static_cast<std::size_t>(i)].row_loss), rows.size() * 4,
                       cudaMemcpyDeviceToHost));
      double sum = 0;
      for (float r : rows) sum += r;
      total += nd.loss_weight * sum / options_.batch;
    }
    return total;
  }

  std::vector<float> parameter(int index) const override {
    return to_graph_layout(graph_, index, copy_floats(master(index), count(index)));
  }

  void set_parameter(int index, std::span<const float> values) override {
    if (static_cast<std::int64_t>(values.size()) != count(index)) throw std::invalid_argument("set_parameter: wrong size");
    const std::vector<float> device = to_device_layout(graph_, index, values);
    CHECK(cudaMemcpyAsync(master(index), device.data(), device.size() * 4, cudaMemcpyHostToDevice, stream()));
    if (void* copy = at(param_buffers(index).compute)) cast(master(index), DType::f32, copy, dtype_, count(index), stream());
    CHECK(cudaStreamSynchronize(stream()));
  }

  // Unscaled (fp16 divides by the loss scale backward ran with): call it between backward and update.
  std::vector<float> gradient(int index) const override {
    std::vector<float> g = copy_floats(grad(index), count(index));
    unscale(g);
    return to_graph_layout(graph_, index, g);
  }

  // Unscaled, as gradient().
  std::vector<float> input_gradient() const override {
    if (!diff(0)) return {};
    const Shape in = graph_.input_shape();
    const auto n = static_cast<std::size_t>(in.size() * options_.batch);
    CHECK(cudaStreamSynchronize(stream()));
    std::vector<float> values(n);
    if (dtype_ == DType::f32) {
      CHECK(cudaMemcpy(values.data(), diff(0), n * 4, cudaMemcpyDeviceToHost));
    } else {
      std::vector<std::uint16_t> raw(n);
      CHECK(cudaMemcpy(raw.data(), diff(0), n * 2, cudaMemcpyDeviceToHost));
      for (std::size_t k = 0; k < n; ++k) values[k] = half_to_float(raw[k]);
    }
    unscale(values);
    return nhwc_to_nchw(values, options_.batch, in);
  }

  std::pair<std::vector<float>, std::vector<float>> running_stats(int node) const override {
    const NodeBuffers& b = plan_.nodes.at(static_cast<std::size_t>(node));
    if (b.running < 0) throw std::invalid_argument(fmt::format("running_stats: node {} is not a batch norm", node));
    const int c = graph_.node(node).out.c;
    std::vector<float> both = copy_floats(static_cast<float*>(at(b.running)), 2 * std::int64_t{c});
    return {{both.begin(), both.begin() + c}, {both.begin() + c, both.end()}};
  }

  std::int64_t bytes_allocated() const override { return plan_.total + static_cast<std::int64_t>(workspace_bytes_); }

 private:
  // Everything cuDNN needs to know about a node; which members are set depends on its op.
  struct NodeState {
    TensorDesc y;  // the output, packed NHWC
    std::optional<FilterDesc> filter;
    std::optional<ConvDesc> conv;
    ConvChoice fwd, bwd_data, bwd_filter;
    std::optional<PoolDesc> pool;
    std::vector<TensorDesc> slices;  // concat: each input's channels within the output
  };

  cudaStream_t stream() const { return stream_.get(); }
  void* at(std::int64_t offset) const { return offset < 0 ? nullptr : arena_.get() + offset; }
  const NodeBuffers& buffers(int i) const { return plan_.nodes[static_cast<std::size_t>(i)]; }
  const ParamBuffers& param_buffers(int p) const { return plan_.params[static_cast<std::size_t>(p)]; }
  void* out(int i) const { return at(buffers(i).out); }
  void* diff(int i) const { return at(buffers(i).diff); }
  float* master(int p) const { return static_cast<float*>(at(param_buffers(p).master)); }
  float* grad(int p) const { return static_cast<float*>(at(param_buffers(p).grad)); }
  float* velocity(int p) const { return static_cast<float*>(at(param_buffers(p).velocity)); }
  // The weights convolutions and GEMMs read: the compute copy, or the master in fp32.
  void* compute_weight(int p) const { return param_buffers(p).compute >= 0 ? at(param_buffers(p).compute) : master(p); }
  std::int64_t count(int p) const { return graph_.params()[static_cast<std::size_t>(p)].size(); }
  LossScaleState* loss_scale() const {
    return dtype_ == DType::f16 ? static_cast<LossScaleState*>(at(plan_.loss_scale)) : nullptr;
  }
  Nhwc layout(int i) const { return packed(options_.batch, graph_.node(i).out); }
  std::int64_t elements(int i) const { return layout(i).elements(); }
  const NodeState& state(int i) const { return nodes_[static_cast<std::size_t>(i)]; }
  // The output of node i is pixels × channels: rows of a bias add or a bias gradient.
  std::int64_t pixels(int i) const { return elements(i) / graph_.node(i).out.c; }
  void* channel_offset(void* base, std::int64_t channels) const {
    return static_cast<std::byte*>(base) + channels * dtype_bytes(dtype_);
  }
  // cuDNN's beta for a gradient written into node j's diff: overwrite the first time, then add.
  const float* beta_for(int j) {
    const bool again = written_[static_cast<std::size_t>(j)];
    written_[static_cast<std::size_t>(j)] = true;
    return again ? &kOne : &kZero;
  }
  bool accumulate(int j) { return *beta_for(j) != 0.f; }
  BatchNormTensors batch_norm_tensors(int i) const {
    const Node& nd = graph_.node(i);
    float* saved = static_cast<float*>(at(buffers(i).saved));
    return {.rows = pixels(i), .c = nd.out.c, .gamma = master(nd.params[0]), .beta = master(nd.params[1]),
            .saved_mean = saved, .saved_invstd = saved + nd.out.c};
  }
  DropoutMask mask(int i, std::uint64_t pass) const { return {options_.seed, pass, i, graph_.node(i).p}; }

  cudnnMathType_t requested_math() const {
    switch (options_.precision) {
      case Precision::fp32: return CUDNN_FMA_MATH;
      case Precision::tf32: return CUDNN_DEFAULT_MATH;
      case Precision::bf16:
      case Precision::fp16: return CUDNN_TENSOR_OP_MATH;
    }
    return CUDNN_DEFAULT_MATH;
  }
  cublasComputeType_t gemm_compute() const {
    return options_.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
           : options_.precision == Precision::fp32 ? CUBLAS_COMPUTE_32F_PEDANTIC
                                                   : CUBLAS_COMPUTE_32F;
  }

  void describe_node(int i) {
    nodes_.emplace_back();
    NodeState& s = nodes_.back();
    const Node& nd = graph_.node(i);
    describe(s.y, dtype_, layout(i));
    if (i == 0) return;
    const int x = nd.inputs[0];
    switch (nd.op) {
      case Op::conv: describe_conv(i, s); break;
      case Op::batch_norm:
        // The engine's own kernels: cuDNN's NHWC batch norm took 634 ms of a 676 ms ResNet-50 step on
        // an H200 (under 60 GB/s); its scratch is the convolutions' workspace, idle meanwhile.
        workspace_bytes_ = std::max(workspace_bytes_, batch_norm_scratch_bytes(nd.out.c));
        break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        const Window& w = nd.window;
        const cudnnPoolingMode_t mode = nd.op == Op::max_pool  ? CUDNN_POOLING_MAX_DETERMINISTIC
                                        : nd.op == Op::avg_pool ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                                : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
        s.pool.emplace();
        CHECK(cudnnSetPooling2dDescriptor(*s.pool, mode, CUDNN_NOT_PROPAGATE_NAN, w.kh, w.kw, w.ph, w.pw, w.sh, w.sw));
        int n = 0, c = 0, h = 0, wd = 0;
        CHECK(cudnnGetPooling2dForwardOutputDim(*s.pool, state(x).y, &n, &c, &h, &wd));
        expect_shape(i, c, h, wd);
        break;
      }
      case Op::concat: {
        for (int j : nd.inputs) {
          s.slices.emplace_back();
          describe(s.slices.back(), dtype_, channel_slice(layout(i), graph_.node(j).out.c));
        }
        break;
      }
      case Op::relu:
      case Op::linear:
      case Op::add:
      case Op::dropout:
      case Op::softmax_ce:
      case Op::input: break;
    }
  }

  void expect_shape(int i, int c, int h, int w) const {
    const Shape want = graph_.node(i).out;
    if (want != Shape{c, h, w})
      throw std::logic_error(fmt::format("engine gpu: node {} ({}): cuDNN computes {}x{}x{}, the graph {}x{}x{}", i,
                                         to_string(graph_.node(i).op), c, h, w, want.c, want.h, want.w));
  }

  void describe_conv(int i, NodeState& s) {
    const Node& nd = graph_.node(i);
    const int x = nd.inputs[0];
    const Shape in = graph_.node(x).out;
    const Window& w = nd.window;
    s.filter.emplace();
    CHECK(cudnnSetFilter4dDescriptor(*s.filter, cudnn_type(dtype_), CUDNN_TENSOR_NHWC, nd.out.c, in.c / nd.groups,
                                     w.kh, w.kw));
    s.conv.emplace();
    // fp32 accumulation in every precision (cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configurations).
    CHECK(cudnnSetConvolution2dDescriptor(*s.conv, w.ph, w.pw, w.sh, w.sw, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT));
    CHECK(cudnnSetConvolutionGroupCount(*s.conv, nd.groups));
    int n = 0, c = 0, h = 0, wd = 0;
    CHECK(cudnnGetConvolution2dForwardOutputDim(*s.conv, state(x).y, *s.filter, &n, &c, &h, &wd));
    expect_shape(i, c, h, wd);

    const bool strict = options_.precision == Precision::fp32;
    auto key = [&](ConvDirection d) { return conv_key(graph_, i, options_.batch, options_.precision, d, device_); };
    auto find = [&](auto search) {
      CHECK(cudnnSetConvolutionMathType(*s.conv, requested_math()));
      return search();
    };
    s.fwd = conv_algorithms().get(key(ConvDirection::forward), [&] {
      return find([&] {
        cudnnConvolutionFwdAlgoPerf_t r[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int returned = 0;
        CHECK(cudnnFindConvolutionForwardAlgorithm(cudnn_.get(), state(x).y, *s.filter, *s.conv, s.y,
                                                   CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, r));
        return fastest(r, returned, workspace_limit_, strict, "forward");
      });
    });
    s.bwd_data = conv_algorithms().get(key(ConvDirection::backward_data), [&] {
      return find([&] {
        cudnnConvolutionBwdDataAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        int returned = 0;
        CHECK(cudnnFindConvolutionBackwardDataAlgorithm(cudnn_.get(), *s.filter, s.y, *s.conv, state(x).y,
                                                        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, r));
        return fastest(r, returned, workspace_limit_, strict, "backward-data");
      });
    });
    s.bwd_filter = conv_algorithms().get(key(ConvDirection::backward_filter), [&] {
      return find([&] {
        cudnnConvolutionBwdFilterAlgoPerf_t r[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        int returned = 0;
        CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(cudnn_.get(), state(x).y, s.y, *s.conv, *s.filter,
                                                          CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, r));
        return fastest(r, returned, workspace_limit_, strict, "backward-filter");
      });
    });
    // One workspace for every convolution, grown to the largest need.
    workspace_bytes_ = std::max({workspace_bytes_, s.fwd.workspace, s.bwd_data.workspace, s.bwd_filter.workspace});
  }

  void allocate() {
    std::size_t free = 0, total = 0;
    CHECK(cudaMemGetInfo(&free, &total));
    const auto workspace = static_cast<std::int64_t>(workspace_bytes_);
    check_fits(graph_, options_.batch, plan_, workspace, static_cast<std::int64_t>(free), static_cast<std::int64_t>(total));
    void* p = nullptr;
    if (cudaMalloc(&p, static_cast<std::size_t>(plan_.total)) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky allocation error
      check_fits(graph_, options_.batch, plan_, workspace, 0, static_cast<std::int64_t>(total));
    }
    arena_.reset(static_cast<std::byte*>(p));
    if (workspace_bytes_ > 0) {
      void* w = nullptr;
      if (cudaMalloc(&w, workspace_bytes_) != cudaSuccess) {
        cudaGetLastError();
        check_fits(graph_, options_.batch, plan_, workspace, plan_.total, static_cast<std::int64_t>(total));
      }
      workspace_.reset(static_cast<std::byte*>(w));
    }
  }

  void initialize() {
    // Zeroed on the engine's stream, which the plain cudaMemcpy calls below do not wait for.
    CHECK(cudaMemsetAsync(arena_.get(), 0, static_cast<std::size_t>(plan_.total), stream()));
    synchronize();
    const auto initial = initial_parameters(graph_, options_.seed);
    for (int p = 0; p < static_cast<int>(initial.size()); ++p) set_parameter(p, initial[static_cast<std::size_t>(p)]);
    for (int i = 0; i < static_cast<int>(graph_.nodes().size()); ++i) {
      if (buffers(i).running < 0) continue;
      const auto c = static_cast<std::size_t>(graph_.node(i).out.c);
      std::vector<float> running(2 * c, 1.f);  // mean 0, variance 1, as torch starts
      std::fill(running.begin(), running.begin() + static_cast<std::ptrdiff_t>(c), 0.f);
      CHECK(cudaMemcpy(at(buffers(i).running), running.data(), running.size() * 4, cudaMemcpyHostToDevice));
    }
    scaler_.initial = options_.loss_scale;
    const LossScaleState scale = initial_loss_scale(scaler_);
    CHECK(cudaMemcpy(at(plan_.loss_scale), &scale, sizeof scale, cudaMemcpyHostToDevice));
    for (std::size_t p = 0; p < graph_.params().size(); ++p) {
      cudaEvent_t e = nullptr;
      CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      grad_ready_.emplace_back(e);
    }
    written_.assign(graph_.nodes().size(), false);
    if (options_.profile) {
      for (auto [spans, n] : {std::pair{&forward_spans_, graph_.nodes().size()}, {&backward_spans_, graph_.nodes().size()},
                              {&update_span_, std::size_t{1}}}) {
        spans->resize(n);
        for (Span& span : *spans) {
          cudaEvent_t a = nullptr, b = nullptr;
          CHECK(cudaEventCreate(&a));
          CHECK(cudaEventCreate(&b));
          span.start.reset(a);
          span.stop.reset(b);
        }
      }
    }
    synchronize();
  }

  void gemm(const Gemm& g, const void* a, const void* b, void* c, DType c_type, const float* beta) {
    CHECK(cublas::api().gemm_ex(cublas_.get(), g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                               g.m, g.n, g.k, &kOne, a, cuda_type(dtype_), g.lda, b, cuda_type(dtype_), g.ldb, beta, c,
                               cuda_type(c_type), g.ldc, gemm_compute(), CUBLAS_GEMM_DEFAULT));
  }

  void forward_node(int i) {
    const Node& nd = graph_.node(i);
    const NodeState& s = state(i);
    const int x = nd.inputs[0];
    cudnnHandle_t dnn = cudnn_.get();
    switch (nd.op) {
      case Op::conv:
        CHECK(cudnnSetConvolutionMathType(*s.conv, s.fwd.math));
        CHECK(cudnnConvolutionForward(dnn, &kOne, state(x).y, out(x), *s.filter, compute_weight(nd.params[0]), *s.conv,
                                      static_cast<cudnnConvolutionFwdAlgo_t>(s.fwd.algo), workspace_.get(),
                                      workspace_bytes_, &kZero, s.y, out(i)));
        if (nd.params.size() > 1) add_bias(out(i), master(nd.params[1]), dtype_, pixels(i), nd.out.c, stream());
        break;
      case Op::batch_norm: {
        // Momentum 0.1 and the unbiased batch variance in the running statistics, as torch.
        float* running = static_cast<float*>(at(buffers(i).running));
        batch_norm_forward(out(x), out(i), dtype_, batch_norm_tensors(i), nd.eps, 0.1f, running, running + nd.out.c,
                           workspace_.get(), stream());
        break;
      }
      case Op::relu:
        relu_forward(out(x), out(i), dtype_, elements(i), stream());
        break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool:
        CHECK(cudnnPoolingForward(dnn, *s.pool, &kOne, state(x).y, out(x), &kZero, s.y, out(i)));
        break;
      case Op::add: add(out(nd.inputs[0]), out(nd.inputs[1]), out(i), dtype_, elements(i), stream()); break;
      case Op::concat: {
        std::int64_t channel = 0;
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
          const int j = nd.inputs[k];
          CHECK(cudnnTransformTensor(dnn, &kOne, state(j).y, out(j), &kZero, s.slices[k], channel_offset(out(i), channel)));
          channel += graph_.node(j).out.c;
        }
        break;
      }
      case Op::linear: {
        const auto in = static_cast<int>(graph_.node(x).out.size());
        gemm(linear_forward(options_.batch, in, nd.out.c), compute_weight(nd.params[0]), out(x), out(i), dtype_, &kZero);
        if (nd.params.size() > 1) add_bias(out(i), master(nd.params[1]), dtype_, options_.batch, nd.out.c, stream());
        break;
      }
      case Op::dropout: dropout_forward(out(x), out(i), dtype_, layout(i), mask(i, pass_), stream()); break;
      case Op::softmax_ce:
        softmax_ce_forward(out(x), dtype_, static_cast<const int*>(at(plan_.labels)), options_.batch,
                           graph_.classes(), static_cast<float*>(at(buffers(i).saved)),
                           static_cast<float*>(at(buffers(i).row_loss)), stream());
        break;
      case Op::input: break;
    }
  }

  void backward_node(int i) {
    const Node& nd = graph_.node(i);
    const NodeState& s = state(i);
    const int x = nd.inputs[0];
    cudnnHandle_t dnn = cudnn_.get();
    switch (nd.op) {
      case Op::conv: {
        const int w = nd.params[0];
        // Reduced precision: cuDNN writes the weight gradient in the compute dtype, then it is widened.
        void* dw = dtype_ == DType::f32 ? grad(w) : at(plan_.weight_grad);
        CHECK(cudnnSetConvolutionMathType(*s.conv, s.bwd_filter.math));
        CHECK(cudnnConvolutionBackwardFilter(dnn, &kOne, state(x).y, out(x), s.y, diff(i), *s.conv,
                                             static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.bwd_filter.algo),
                                             workspace_.get(), workspace_bytes_, &kZero, *s.filter, dw));
        if (dtype_ != DType::f32) cast(dw, dtype_, grad(w), DType::f32, count(w), stream());
        if (nd.params.size() > 1) bias_gradient(diff(i), dtype_, pixels(i), nd.out.c, grad(nd.params[1]), stream());
        if (!diff(x)) break;
        CHECK(cudnnSetConvolutionMathType(*s.conv, s.bwd_data.math));
        CHECK(cudnnConvolutionBackwardData(dnn, &kOne, *s.filter, compute_weight(w), s.y, diff(i), *s.conv,
                                           static_cast<cudnnConvolutionBwdDataAlgo_t>(s.bwd_data.algo),
                                           workspace_.get(), workspace_bytes_, beta_for(x), state(x).y, diff(x)));
        break;
      }
      case Op::batch_norm:
        batch_norm_backward(out(x), diff(i), diff(x), dtype_, batch_norm_tensors(i), grad(nd.params[0]),
                            grad(nd.params[1]), diff(x) && accumulate(x), workspace_.get(), stream());
        break;
      case Op::relu:
        if (diff(x))
          relu_backward(out(i), diff(i), diff(x), dtype_, elements(i), accumulate(x), stream());
        break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool:
        if (diff(x))
          CHECK(cudnnPoolingBackward(dnn, *s.pool, &kOne, s.y, out(i), s.y, diff(i), state(x).y, out(x), beta_for(x),
                                     state(x).y, diff(x)));
        break;
      case Op::add:
        for (int j : nd.inputs)
          if (diff(j)) copy_or_accumulate(diff(i), diff(j), dtype_, elements(j), accumulate(j), stream());
        break;
      case Op::concat: {
        std::int64_t channel = 0;
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
          const int j = nd.inputs[k];
          if (diff(j))
            CHECK(cudnnTransformTensor(dnn, &kOne, s.slices[k], channel_offset(diff(i), channel), beta_for(j), state(j).y,
                                       diff(j)));
          channel += graph_.node(j).out.c;
        }
        break;
      }
      case Op::linear: {
        const auto in = static_cast<int>(graph_.node(x).out.size());
        const int w = nd.params[0];
        // The weight gradient goes straight to fp32 (cuBLAS widens 16-bit products into an fp32 C).
        gemm(linear_backward_weights(options_.batch, in, nd.out.c), out(x), diff(i), grad(w), DType::f32, &kZero);
        if (nd.params.size() > 1) bias_gradient(diff(i), dtype_, options_.batch, nd.out.c, grad(nd.params[1]), stream());
        if (diff(x))
          gemm(linear_backward_data(options_.batch, in, nd.out.c), compute_weight(w), diff(i), diff(x), dtype_,
               beta_for(x));
        break;
      }
      case Op::dropout:
        if (diff(x)) dropout_backward(diff(i), diff(x), dtype_, layout(i), mask(i, pass_ - 1), accumulate(x), stream());
        break;
      case Op::softmax_ce:
        if (diff(x))
          softmax_ce_backward(static_cast<const float*>(at(buffers(i).saved)), static_cast<const int*>(at(plan_.labels)),
                              options_.batch, graph_.classes(), nd.loss_weight / static_cast<float>(options_.batch),
                              loss_scale(), diff(x), dtype_, accumulate(x), stream());
        break;
      case Op::input: break;
    }
  }

  // fp16: divides out the loss scale the last backward ran with.
  void unscale(std::vector<float>& values) const {
    const LossScaleState* device_state = loss_scale();
    if (!device_state) return;
    LossScaleState s;
    CHECK(cudaMemcpy(&s, device_state, sizeof s, cudaMemcpyDeviceToHost));
    for (auto& v : values) v /= s.scale;
  }

  std::vector<float> copy_floats(const float* device, std::int64_t n) const {
    CHECK(cudaStreamSynchronize(stream()));
    std::vector<float> v(static_cast<std::size_t>(n));
    CHECK(cudaMemcpy(v.data(), device, v.size() * 4, cudaMemcpyDeviceToHost));
    return v;
  }

  float half_to_float(std::uint16_t bits) const {
    if (dtype_ == DType::bf16) {
      const std::uint32_t wide = std::uint32_t{bits} << 16;
      float f = 0;
      std::memcpy(&f, &wide, 4);
      return f;
    }
    __half_raw raw;
    raw.x = bits;
    return __half2float(__half(raw));
  }

  Graph graph_;
  EngineOptions options_;
  DType dtype_;
  int device_ = 0;
  Stream stream_;
  Cudnn cudnn_;
  Cublas cublas_;
  MemoryPlan plan_;
  DeviceMemory arena_, workspace_;
  std::size_t workspace_bytes_ = 0, workspace_limit_ = 0;
  std::vector<NodeState> nodes_;
  std::vector<Event> grad_ready_;
  std::vector<bool> written_;
  LossScaleConfig scaler_;
  std::uint64_t pass_ = 0;

  // EngineOptions::profile: a pair of events around each node's forward and backward and around
  // update(); synchronize() adds up what the finished step recorded.
  struct Span {
    Event start, stop;
    bool recorded = false;
    double ms = 0;
    void collect() {
      if (!recorded) return;
      float elapsed = 0;
      CHECK(cudaEventElapsedTime(&elapsed, start.get(), stop.get()));
      ms += elapsed;
      recorded = false;
    }
  };
  std::vector<Span> forward_spans_, backward_spans_, update_span_;  // empty unless profiling

  template <class Work>
  void timed(std::vector<Span>& spans, int i, Work&& work) {
    if (spans.empty()) return work();
    Span& span = spans[static_cast<std::size_t>(i)];
    CHECK(cudaEventRecord(span.start.get(), stream()));
    work();
    CHECK(cudaEventRecord(span.stop.get(), stream()));
    span.recorded = true;
  }
};

}  // namespace
}  // namespace gpu

std::unique_ptr<Engine> make_gpu_engine(const Graph& graph, const EngineOptions& options) {
  int devices = 0;
  const cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess) throw Unavailable(fmt::format("engine gpu: no GPU ({})", cudaGetErrorString(err)));
  if (devices == 0) throw Unavailable("engine gpu: no GPU (CUDA sees no devices)");
  // The engine works on the calling thread's current device: a rank takes its own GPU.
  if (cudaSetDevice(options.device % devices) != cudaSuccess)
    throw Unavailable(fmt::format("engine gpu: cannot use GPU {} of {}", options.device % devices, devices));
  return std::make_unique<gpu::GpuEngine>(graph, options);
}

void copy_to_host(const GradientReady& gradient, float* host) {
  gpu::CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(gradient.event)));
  gpu::CHECK(cudaMemcpy(host, gradient.data, static_cast<std::size_t>(gradient.count) * 4, cudaMemcpyDeviceToHost));
}

void copy_to_device(float* device, const float* host, std::int64_t count) {
  // From pageable memory cudaMemcpy returns once the data is staged, not landed: see finish_copies_to_device.
  gpu::CHECK(cudaMemcpy(device, host, static_cast<std::size_t>(count) * 4, cudaMemcpyHostToDevice));
}

void finish_copies_to_device() { gpu::CHECK(cudaDeviceSynchronize()); }

}  // namespace rocebench::models
