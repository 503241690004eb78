// The CPU engine: oneDNN primitives for convolution, batch norm, ReLU, pooling, linear layers and
// concat, plain loops for the rest (add, dropout, softmax cross-entropy, gradient accumulation).
//
// Layouts: convolutions, pooling and linear layers are created with format `any`, so oneDNN picks
// the blocked layouts its kernels prefer (nChw16c …); batch norm and ReLU work in whatever layout
// they are given. Each node owns its output and the gradient of its output in the layout its
// primitive chose. A consumer that needs another layout (the first convolution reading the NCHW
// images, dropout and the loss, which index elements logically) gets a reorder on that edge only,
// and its gradient is reordered back. `plain_layout` keeps everything NCHW (the reference layout).
//
// Precision: fp32, or bf16 mixed precision where the CPU has bf16 instructions: activations,
// their gradients and a compute copy of the weights are bf16; master weights, weight gradients,
// momentum, batch-norm statistics and the loss stay fp32 (as PyTorch's autocast with an fp32 model).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
#include "cpu_engine.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;
using Args = std::unordered_map<int, memory>;

memory::dims nchw(int n, const Shape& s) { return {n, s.c, s.h, s.w}; }
memory::desc plain(const memory::dims& d, dt type = dt::f32) {
  const tag t = d.size() == 1 ? tag::x : d.size() == 2 ? tag::nc : d.size() == 4 ? tag::nchw : tag::goihw;
  return memory::desc(d, type, t);
}
memory::desc any(const memory::dims& d, dt type) { return memory::desc(d, type, tag::any); }
// The same layout holding another element type (strides count elements, so they carry over).
memory::desc retyped(const memory::desc& md, dt type) {
  dnnl_memory_desc_t d = md.data;
  d.data_type = static_cast<dnnl_data_type_t>(type);
  return memory::desc(d);
}
bool is_blocked(const memory::desc& md) { return md.data.format_kind == dnnl_blocked && md.data.format_desc.blocking.inner_nblks > 0; }

bool cpu_has_bf16() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto bf16 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core_bf16);
  return (isa & bf16) == bf16;
}

// Elementwise loops on fp32 or bf16 buffers: values are widened to float, computed, rounded back.
float widen(float v) { return v; }
float widen(std::uint16_t v) {
  const std::uint32_t bits = static_cast<std::uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
template <class T> T narrow(float v) {
  if constexpr (std::is_same_v<T, float>) {
    return v;
  } else {
    std::uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (std::isnan(v)) return 0x7fc0;
    bits += 0x7fff + ((bits >> 16) & 1);  // round to nearest even
    return static_cast<std::uint16_t>(bits >> 16);
  }
}
// Calls fn with a value of the element type of `type` (float or std::uint16_t for bf16).
template <class Fn> void with_element_type(dt type, Fn&& fn) {
  if (type == dt::bf16) fn(std::uint16_t{});
  else fn(float{});
}
std::size_t elements(const memory::desc& md) { return md.get_size() / (md.data_type() == dt::bf16 ? 2 : 4); }

// What a node's primitive reads from one of its inputs: the producer's output itself, or, when the
// primitive wants another layout or type, a copy reordered on this edge (and its gradient reordered back).
struct Edge {
  int from = 0;
  memory::desc md;
  memory copy;  // empty when md is the producer's own
  dnnl::reorder to_copy, gradient_back;
};

// Primitives and buffers of one node; which ones exist depends on its op.
struct Prims {
  dnnl::primitive fwd, bwd_data, bwd_weights;
  std::vector<Edge> in;
  memory::desc dst_md, ws_md;
  // conv and linear: weights as the primitive reads them and their gradient as it writes it, when
  // those differ from the plain fp32 master weights and gradients (blocked layout or bf16).
  memory::desc master_md, bias_md;
  // Backward-data may want yet another weights layout (the forward's would send it to a reference kernel).
  memory weights, data_weights, diff_weights;
  dnnl::reorder weights_from_master, data_weights_from_master, gradient_to_master;
  memory workspace;                // max pooling indices
  std::vector<dnnl::reorder> split;  // concat backward: the output gradient's channel slices to each input
  std::vector<float> saved;        // batch norm mean+variance, dropout scale, softmax probabilities
  std::vector<float> running_mean, running_var;
};

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Graph& graph, const EngineOptions& options)
      : graph_(graph), options_(options), eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
    const auto supported = cpu_precisions();
    if (std::find(supported.begin(), supported.end(), options.precision) == supported.end()) {
      std::vector<std::string> names;
      for (auto p : supported) names.push_back(to_string(p));
      throw InputError(fmt::format("engine cpu supports precisions {} on this CPU, not {}{}", fmt::join(names, ", "),
                                   to_string(options.precision),
                                   options.precision == Precision::bf16 ? " (bf16 needs avx512_bf16 or AMX)" : ""));
    }
    compute_ = options.precision == Precision::bf16 ? dt::bf16 : dt::f32;
    const auto& nodes = graph.nodes();
    out_.resize(nodes.size());
    diff_.resize(nodes.size());
    written_.resize(nodes.size());
    prims_.resize(nodes.size());
    times_.resize(nodes.size() + 1);
    for (std::size_t i = 0; i < nodes.size(); ++i) times_[i].node = static_cast<int>(i);
    weights_ = initial_parameters(graph, options.seed);
    for (const auto& w : weights_) {
      grads_.emplace_back(w.size(), 0.f);
      velocity_.emplace_back(w.size(), 0.f);
    }
    labels_.resize(static_cast<std::size_t>(options.batch));
    prims_[0].dst_md = plain(nchw(options.batch, graph.input_shape()));
    std::size_t largest_edge = 0, largest_output = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      if (i > 0) build(static_cast<int>(i));
      const auto& p = prims_[i];
      out_[i] = memory(p.dst_md, eng_);
      if (i > 0 || options.input_gradient) diff_[i] = memory(p.dst_md, eng_);
      largest_output = std::max(largest_output, p.dst_md.get_size());
      for (const auto& e : p.in) largest_edge = std::max(largest_edge, e.md.get_size());
    }
    scratch_ = memory(memory::desc({static_cast<memory::dim>(largest_output)}, dt::u8, tag::x), eng_);
    edge_scratch_ = memory(memory::desc({static_cast<memory::dim>(largest_edge)}, dt::u8, tag::x), eng_);
  }

  const Graph& graph() const override { return graph_; }
  const EngineOptions& options() const override { return options_; }

  void set_batch(std::span<const float> images, std::span<const int> labels) override {
    if (images.size() * 4 != out_[0].get_desc().get_size() || labels.size() != labels_.size())
      throw std::invalid_argument("set_batch: sizes do not match the batch");
    std::memcpy(out_[0].get_data_handle(), images.data(), images.size() * 4);
    std::copy(labels.begin(), labels.end(), labels_.begin());
  }

  void forward() override {
    loss_ = 0;
    for (std::size_t i = 1; i < graph_.nodes().size(); ++i) timed(times_[i].forward_ms, [&] { forward_node(static_cast<int>(i)); });
    stream_.wait();
    ++pass_;
  }

  void backward(const GradientCallback& ready) override {
    std::fill(written_.begin(), written_.end(), false);
    for (int i = static_cast<int>(graph_.nodes().size()) - 1; i > 0; --i) {
      timed(times_[at(i)].backward_ms, [&] { backward_node(i); });
      for (int p : graph_.node(i).params)
        if (ready) ready({p, grads_[at(p)].data(), graph_.params()[at(p)].size(), false});
    }
  }

  void update(const SgdOptions& sgd, double lr) override {
    timed(times_.back().backward_ms, [&] {
      for (std::size_t p = 0; p < weights_.size(); ++p)
        sgd_update(graph_.params()[p].role, weights_[p], grads_[p], velocity_[p], lr, sgd);
    });
  }

  // Node i's times at times_[i]; the update's at the end, as node -1 (the gpu engine's convention).
  std::vector<LayerTime> layer_times() const override {
    if (!options_.profile) return {};
    std::vector<LayerTime> out(times_.begin() + 1, times_.end());
    out.back().node = -1;
    return out;
  }

  void synchronize() override { stream_.wait(); }
  double loss() override { return loss_; }

  std::vector<float> parameter(int index) const override { return weights_.at(at(index)); }
  void set_parameter(int index, std::span<const float> values) override {
    auto& w = weights_.at(at(index));
    if (values.size() != w.size()) throw std::invalid_argument("set_parameter: wrong size");
    std::copy(values.begin(), values.end(), w.begin());
  }
  std::vector<float> gradient(int index) const override { return grads_.at(at(index)); }
  std::vector<float> input_gradient() const override {
    if (!diff_[0]) return {};
    const auto* d = static_cast<const float*>(diff_[0].get_data_handle());
    return {d, d + diff_[0].get_desc().get_size() / 4};
  }
  std::pair<std::vector<float>, std::vector<float>> running_stats(int node) const override {
    const auto& p = prims_.at(at(node));
    return {p.running_mean, p.running_var};
  }

  std::int64_t bytes_allocated() const override {
    std::size_t bytes = scratch_.get_desc().get_size() + edge_scratch_.get_desc().get_size();
    auto add = [&](const memory& m) { bytes += m ? m.get_desc().get_size() : 0; };
    for (std::size_t i = 0; i < out_.size(); ++i) {
      add(out_[i]);
      add(diff_[i]);
      const auto& p = prims_[i];
      for (const auto* m : {&p.weights, &p.data_weights, &p.diff_weights, &p.workspace}) add(*m);
      for (const auto& e : p.in) add(e.copy);
      bytes += 4 * p.saved.size();
    }
    for (const auto* set : {&weights_, &grads_, &velocity_})
      for (const auto& v : *set) bytes += 4 * v.size();
    return static_cast<std::int64_t>(bytes);
  }

  // Activations held in a blocked layout (for tests: `any` really picked blocked layouts).
  int blocked_activations() const {
    int count = 0;
    for (const auto& p : prims_) count += is_blocked(p.dst_md) ? 1 : 0;
    return count;
  }

 private:
  const Node& node(int i) const { return graph_.node(i); }
  static std::size_t at(int i) { return static_cast<std::size_t>(i); }
  memory view(const memory::desc& md, void* p) { return memory(md, eng_, p); }
  void run(const dnnl::reorder& r, const memory& from, const memory& to) {
    r.execute(stream_, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }
  memory view(const memory::desc& md, const std::vector<float>& v) { return view(md, const_cast<float*>(v.data())); }
  float* master(int i, std::size_t k) { return weights_[at(node(i).params[k])].data(); }
  float* master_grad(int i, std::size_t k) { return grads_[at(node(i).params[k])].data(); }
  bool needs_diff(int i) const { return static_cast<bool>(diff_[at(i)]); }
  const memory::desc& out_md(int i) const { return prims_[at(i)].dst_md; }

  // An edge from input k of node i: the primitive reads `md`; a reorder bridges a different layout or type.
  void connect(int i, std::size_t k, const memory::desc& md) {
    Edge e{node(i).inputs[k], md, {}, {}, {}};
    const memory::desc& have = out_md(e.from);
    if (md != have) {
      e.copy = memory(md, eng_);
      e.to_copy = dnnl::reorder(dnnl::reorder::primitive_desc(eng_, have, eng_, md));
      e.gradient_back = dnnl::reorder(dnnl::reorder::primitive_desc(eng_, md, eng_, have));
    }
    auto& in = prims_[at(i)].in;
    if (in.size() <= k) in.resize(k + 1);
    in[k] = std::move(e);
  }
  // Input k of node i as its primitive reads it (forward reorders it on the edge first).
  memory input(int i, std::size_t k, bool reorder) {
    Edge& e = prims_[at(i)].in[k];
    if (!e.copy) return out_[at(e.from)];
    if (reorder) run(e.to_copy, out_[at(e.from)], e.copy);
    return e.copy;
  }

  // Where backward writes the gradient for node j: its own buffer the first time, else the scratch
  // buffer, which finish_diff() then adds in (j feeds several consumers).
  // A node without a gradient buffer (the input, unless asked for) gets the scratch, discarded.
  void* begin_diff(int j) { return written_[at(j)] || !needs_diff(j) ? scratch_.get_data_handle() : diff_[at(j)].get_data_handle(); }
  void finish_diff(int j) {
    if (!needs_diff(j)) return;
    if (written_[at(j)]) {
      stream_.wait();
      void* d = diff_[at(j)].get_data_handle();
      const void* s = scratch_.get_data_handle();
      const std::size_t n = elements(out_md(j));
      with_element_type(out_md(j).data_type(), [&](auto t) {
        using T = decltype(t);
        auto* y = static_cast<T*>(d);
        const auto* x = static_cast<const T*>(s);
        for (std::size_t k = 0; k < n; ++k) y[k] = narrow<T>(widen(y[k]) + widen(x[k]));
      });
    }
    written_[at(j)] = true;
  }
  // The gradient of input k of node i, as its primitive writes it (in the edge's layout).
  memory diff_input(int i, std::size_t k) {
    const Edge& e = prims_[at(i)].in[k];
    return e.copy ? view(e.md, edge_scratch_.get_data_handle()) : view(e.md, begin_diff(e.from));
  }
  // Then brings it into the producer's layout and adds it in.
  void finish_diff_input(int i, std::size_t k) {
    Edge& e = prims_[at(i)].in[k];
    if (e.copy && needs_diff(e.from))
      run(e.gradient_back, view(e.md, edge_scratch_.get_data_handle()), view(out_md(e.from), begin_diff(e.from)));
    stream_.wait();
    finish_diff(e.from);
  }

  // The layout a layer that indexes elements itself needs: NCHW (or NC) in the compute type.
  memory::desc logical(int x) const { return plain(out_md(x).dims(), compute_); }
  // What a layout-agnostic primitive (batch norm, ReLU, pooling) reads: the producer's layout, in the compute type.
  memory::desc as_given(int x) const { return retyped(out_md(x), compute_); }
  bool preferred() const { return !options_.plain_layout; }
  memory::desc chosen(const memory::dims& d) const { return preferred() ? any(d, compute_) : plain(d, compute_); }

  // Weights as the primitive wants them: the master tensor itself, or a compute copy refreshed each
  // forward; and the weight gradient as the primitive writes it, reordered into the fp32 master gradient.
  void bind_weights(Prims& p, const memory::desc& master_md, const memory::desc& wanted, const memory::desc& data_wanted,
                    const memory::desc& diff_wanted) {
    p.master_md = master_md;
    if (wanted != master_md) {
      p.weights = memory(wanted, eng_);
      p.weights_from_master = dnnl::reorder(dnnl::reorder::primitive_desc(eng_, master_md, eng_, wanted));
    }
    if (data_wanted != wanted) {
      p.data_weights = memory(data_wanted, eng_);
      p.data_weights_from_master = dnnl::reorder(dnnl::reorder::primitive_desc(eng_, master_md, eng_, data_wanted));
    }
    if (diff_wanted != master_md) {
      p.diff_weights = memory(diff_wanted, eng_);
      p.gradient_to_master = dnnl::reorder(dnnl::reorder::primitive_desc(eng_, diff_wanted, eng_, master_md));
    }
  }
  memory compute_weights(int i, bool refresh) {
    Prims& p = prims_[at(i)];
    if (!p.weights) return view(p.master_md, master(i, 0));
    if (refresh) run(p.weights_from_master, view(p.master_md, master(i, 0)), p.weights);
    return p.weights;
  }
  memory backward_data_weights(int i) {
    Prims& p = prims_[at(i)];
    if (!p.data_weights) return compute_weights(i, false);
    run(p.data_weights_from_master, view(p.master_md, master(i, 0)), p.data_weights);
    return p.data_weights;
  }

  void build(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const int n = options_.batch;
    const int x = nd.inputs.empty() ? 0 : nd.inputs[0];
    const Shape in = node(x).out;
    const auto fwd = dnnl::prop_kind::forward_training;
    switch (nd.op) {
      case Op::conv: {
        const Window& w = nd.window;
        const memory::dims strides{w.sh, w.sw}, pad{w.ph, w.pw};
        const memory::dims wdims = nd.groups == 1 ? memory::dims{nd.out.c, in.c, w.kh, w.kw}
                                                  : memory::dims{nd.groups, nd.out.c / nd.groups, in.c / nd.groups, w.kh, w.kw};
        const bool bias = nd.params.size() > 1;
        if (bias) p.bias_md = plain({nd.out.c});
        const auto src = chosen(nchw(n, in)), wts = chosen(wdims), dst = chosen(nchw(n, nd.out));
        const auto algo = dnnl::algorithm::convolution_direct;
        auto fd = bias ? dnnl::convolution_forward::desc(fwd, algo, src, wts, p.bias_md, dst, strides, pad, pad)
                       : dnnl::convolution_forward::desc(fwd, algo, src, wts, dst, strides, pad, pad);
        dnnl::convolution_forward::primitive_desc fpd(fd, eng_);
        p.fwd = dnnl::convolution_forward(fpd);
        p.dst_md = fpd.dst_desc();
        connect(i, 0, fpd.src_desc());
        dnnl::convolution_backward_data::primitive_desc dpd(
            {algo, fpd.src_desc(), preferred() ? any(wdims, compute_) : fpd.weights_desc(), fpd.dst_desc(), strides, pad, pad}, eng_, fpd);
        p.bwd_data = dnnl::convolution_backward_data(dpd);
        // Weight gradients in fp32 whatever the compute type: the optimizer accumulates in fp32.
        const auto dwts = preferred() ? any(wdims, dt::f32) : plain(wdims);
        auto wd = bias ? dnnl::convolution_backward_weights::desc(algo, fpd.src_desc(), dwts, p.bias_md, fpd.dst_desc(), strides, pad, pad)
                       : dnnl::convolution_backward_weights::desc(algo, fpd.src_desc(), dwts, fpd.dst_desc(), strides, pad, pad);
        dnnl::convolution_backward_weights::primitive_desc wpd(wd, eng_, fpd);
        p.bwd_weights = dnnl::convolution_backward_weights(wpd);
        bind_weights(p, plain(wdims), fpd.weights_desc(), dpd.weights_desc(), wpd.diff_weights_desc());
        break;
      }
      case Op::linear: {
        // A 2-D input (another linear layer's output) keeps 2-D source and weights: oneDNN cannot
        // reorder between ranks. The weights' memory is the same either way.
        const bool flat = out_md(x).dims().size() == 2;
        const memory::dims wdims = flat ? memory::dims{nd.out.c, in.size()} : memory::dims{nd.out.c, in.c, in.h, in.w};
        const memory::dims sdims = flat ? memory::dims{n, in.size()} : nchw(n, in);
        const bool bias = nd.params.size() > 1;
        if (bias) p.bias_md = plain({nd.out.c});
        const auto src = chosen(sdims), wts = chosen(wdims), dst = plain({n, nd.out.c}, compute_);
        auto fd = bias ? dnnl::inner_product_forward::desc(fwd, src, wts, p.bias_md, dst)
                       : dnnl::inner_product_forward::desc(fwd, src, wts, dst);
        dnnl::inner_product_forward::primitive_desc fpd(fd, eng_);
        p.fwd = dnnl::inner_product_forward(fpd);
        p.dst_md = fpd.dst_desc();
        connect(i, 0, fpd.src_desc());
        dnnl::inner_product_backward_data::primitive_desc dpd(
            {fpd.src_desc(), preferred() ? any(wdims, compute_) : fpd.weights_desc(), fpd.dst_desc()}, eng_, fpd);
        p.bwd_data = dnnl::inner_product_backward_data(dpd);
        const auto dwts = preferred() ? any(wdims, dt::f32) : plain(wdims);
        auto wd = bias ? dnnl::inner_product_backward_weights::desc(fpd.src_desc(), dwts, p.bias_md, fpd.dst_desc())
                       : dnnl::inner_product_backward_weights::desc(fpd.src_desc(), dwts, fpd.dst_desc());
        dnnl::inner_product_backward_weights::primitive_desc wpd(wd, eng_, fpd);
        p.bwd_weights = dnnl::inner_product_backward_weights(wpd);
        bind_weights(p, plain(wdims), fpd.weights_desc(), dpd.weights_desc(), wpd.diff_weights_desc());
        break;
      }
      case Op::batch_norm: {
        connect(i, 0, as_given(x));
        const auto& src = p.in[0].md;
        const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
        dnnl::batch_normalization_forward::primitive_desc fpd({fwd, src, nd.eps, flags}, eng_);
        p.fwd = dnnl::batch_normalization_forward(fpd);
        p.bwd_data = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
            {dnnl::prop_kind::backward, src, src, nd.eps, flags}, eng_, fpd));
        p.dst_md = fpd.dst_desc();
        p.master_md = plain({nd.out.c});
        p.saved.resize(2 * static_cast<std::size_t>(nd.out.c));
        p.running_mean.assign(static_cast<std::size_t>(nd.out.c), 0.f);
        p.running_var.assign(static_cast<std::size_t>(nd.out.c), 1.f);
        break;
      }
      case Op::relu: {
        connect(i, 0, as_given(x));
        const auto& src = p.in[0].md;
        dnnl::eltwise_forward::primitive_desc fpd({fwd, dnnl::algorithm::eltwise_relu, src, 0.f, 0.f}, eng_);
        p.fwd = dnnl::eltwise_forward(fpd);
        p.bwd_data = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
            {dnnl::algorithm::eltwise_relu, src, src, 0.f, 0.f}, eng_, fpd));
        p.dst_md = fpd.dst_desc();
        break;
      }
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        connect(i, 0, as_given(x));
        const auto& src = p.in[0].md;
        const Window& w = nd.window;
        const memory::dims strides{w.sh, w.sw}, kernel{w.kh, w.kw}, pad{w.ph, w.pw};
        const auto algo = nd.op == Op::max_pool  ? dnnl::algorithm::pooling_max
                          : nd.op == Op::avg_pool ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
        const auto dst = chosen(nchw(n, nd.out));
        dnnl::pooling_forward::primitive_desc fpd({fwd, algo, src, dst, strides, kernel, pad, pad}, eng_);
        p.fwd = dnnl::pooling_forward(fpd);
        p.dst_md = fpd.dst_desc();
        p.bwd_data = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
            {algo, src, p.dst_md, strides, kernel, pad, pad}, eng_, fpd));
        if (nd.op == Op::max_pool) p.workspace = memory(fpd.workspace_desc(), eng_);
        break;
      }
      case Op::add:
        // Both inputs in the first one's layout; the output keeps it.
        connect(i, 0, as_given(x));
        connect(i, 1, p.in[0].md);
        p.dst_md = p.in[0].md;
        break;
      case Op::concat: {
        // oneDNN's concat reads inputs in any layout; the output is NCHW so backward can hand each
        // input its channel slice of the gradient.
        std::vector<memory::desc> srcs;
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
          connect(i, k, as_given(nd.inputs[k]));
          srcs.push_back(p.in[k].md);
        }
        p.dst_md = plain(nchw(n, nd.out), compute_);
        p.fwd = dnnl::concat(dnnl::concat::primitive_desc(p.dst_md, 1, srcs, eng_));
        memory::dim offset = 0;
        for (const auto& src : srcs) {
          const auto slice = p.dst_md.submemory_desc(src.dims(), {0, offset, 0, 0});
          p.split.emplace_back(dnnl::reorder::primitive_desc(eng_, slice, eng_, src));
          offset += src.dims()[1];
        }
        break;
      }
      case Op::dropout:
        connect(i, 0, logical(x));
        p.dst_md = p.in[0].md;
        p.saved.resize(elements(p.dst_md));
        break;
      case Op::softmax_ce:
        connect(i, 0, logical(x));
        p.dst_md = plain(nchw(n, nd.out));
        p.saved.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(in.c));
        break;
      case Op::input: break;
    }
  }

  void forward_node(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const memory& dst = out_[at(i)];
    switch (nd.op) {
      case Op::conv:
      case Op::linear: {
        Args args{{DNNL_ARG_SRC, input(i, 0, true)}, {DNNL_ARG_WEIGHTS, compute_weights(i, true)}, {DNNL_ARG_DST, dst}};
        if (nd.params.size() > 1) args.insert({DNNL_ARG_BIAS, view(p.bias_md, master(i, 1))});
        p.fwd.execute(stream_, args);
        break;
      }
      case Op::batch_norm: {
        const auto c = static_cast<std::size_t>(nd.out.c);
        float* mean = p.saved.data();
        float* var = mean + c;
        p.fwd.execute(stream_, {{DNNL_ARG_SRC, input(i, 0, true)}, {DNNL_ARG_DST, dst},
                                {DNNL_ARG_SCALE, view(p.master_md, master(i, 0))}, {DNNL_ARG_SHIFT, view(p.master_md, master(i, 1))},
                                {DNNL_ARG_MEAN, view(p.master_md, mean)}, {DNNL_ARG_VARIANCE, view(p.master_md, var)}});
        stream_.wait();
        const double count = static_cast<double>(options_.batch) * nd.out.h * nd.out.w;
        const float unbias = count > 1 ? static_cast<float>(count / (count - 1)) : 1.f;
        for (std::size_t k = 0; k < c; ++k) {
          p.running_mean[k] = 0.9f * p.running_mean[k] + 0.1f * mean[k];
          p.running_var[k] = 0.9f * p.running_var[k] + 0.1f * var[k] * unbias;
        }
        break;
      }
      case Op::relu: p.fwd.execute(stream_, {{DNNL_ARG_SRC, input(i, 0, true)}, {DNNL_ARG_DST, dst}}); break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        Args args{{DNNL_ARG_SRC, input(i, 0, true)}, {DNNL_ARG_DST, dst}};
        if (p.workspace) args.insert({DNNL_ARG_WORKSPACE, p.workspace});
        p.fwd.execute(stream_, args);
        break;
      }
      case Op::add: {
        const memory a = input(i, 0, true), b = input(i, 1, true);
        stream_.wait();
        elementwise(dst, [](float u, float v) { return u + v; }, a, b);
        break;
      }
      case Op::concat: {
        Args args{{DNNL_ARG_DST, dst}};
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) args.insert({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k), input(i, k, true)});
        p.fwd.execute(stream_, args);
        break;
      }
      case Op::dropout: {
        const memory src = input(i, 0, true);
        const float scale = 1.f / (1.f - nd.p);
        for (std::size_t k = 0; k < p.saved.size(); ++k)
          p.saved[k] = dropout_keeps(options_.seed, pass_, i, static_cast<std::int64_t>(k), nd.p) ? scale : 0.f;
        const memory mask = view(plain(p.dst_md.dims()), p.saved);
        stream_.wait();
        elementwise(dst, [](float u, float m) { return u * m; }, src, mask);
        break;
      }
      case Op::softmax_ce: {
        const memory logits = input(i, 0, true);
        stream_.wait();
        loss_ += softmax_ce_forward(i, logits);
        break;
      }
      case Op::input: break;
    }
  }

  // y = f(a, b) element by element; y and a share a layout and type, b shares the layout (any type).
  template <class F> void elementwise(const memory& y, F f, const memory& a, const memory& b) {
    const std::size_t n = elements(y.get_desc());
    with_element_type(y.get_desc().data_type(), [&](auto t) {
      using T = decltype(t);
      auto* out = static_cast<T*>(y.get_data_handle());
      const auto* u = static_cast<const T*>(a.get_data_handle());
      with_element_type(b.get_desc().data_type(), [&](auto tb) {
        using B = decltype(tb);
        const auto* v = static_cast<const B*>(b.get_data_handle());
        for (std::size_t k = 0; k < n; ++k) out[k] = narrow<T>(f(widen(u[k]), widen(v[k])));
      });
    });
  }

  double softmax_ce_forward(int i, const memory& logits_memory) {
    const Node& nd = node(i);
    auto& prob = prims_[at(i)].saved;
    const auto k = static_cast<std::size_t>(graph_.classes());
    std::vector<float> z(k);
    double total = 0;
    for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b) {
      with_element_type(logits_memory.get_desc().data_type(), [&](auto t) {
        const auto* logits = static_cast<const decltype(t)*>(logits_memory.get_data_handle()) + b * k;
        for (std::size_t c = 0; c < k; ++c) z[c] = widen(logits[c]);
      });
      const float top = *std::max_element(z.begin(), z.end());
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(z[c] - top));
      for (std::size_t c = 0; c < k; ++c) prob[b * k + c] = static_cast<float>(std::exp(static_cast<double>(z[c] - top)) / sum);
      const auto label = static_cast<std::size_t>(labels_[b]);
      total += std::log(sum) - static_cast<double>(z[label] - top);
    }
    const double loss = nd.loss_weight * total / options_.batch;
    auto* y = static_cast<float*>(out_[at(i)].get_data_handle());
    std::fill(y, y + elements(out_md(i)), static_cast<float>(loss));
    return loss;
  }

  void backward_node(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const memory& diff_dst = diff_[at(i)];
    const int x = nd.inputs.empty() ? 0 : nd.inputs[0];
    switch (nd.op) {
      case Op::conv:
      case Op::linear: {
        const memory diff_weights = p.diff_weights ? p.diff_weights : view(p.master_md, master_grad(i, 0));
        Args args{{DNNL_ARG_SRC, input(i, 0, false)}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_WEIGHTS, diff_weights}};
        if (nd.params.size() > 1) args.insert({DNNL_ARG_DIFF_BIAS, view(p.bias_md, master_grad(i, 1))});
        p.bwd_weights.execute(stream_, args);
        if (p.diff_weights) run(p.gradient_to_master, p.diff_weights, view(p.master_md, master_grad(i, 0)));
        if (needs_diff(x)) {
          p.bwd_data.execute(stream_, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, backward_data_weights(i)},
                                       {DNNL_ARG_DIFF_SRC, diff_input(i, 0)}});
          finish_diff_input(i, 0);
        }
        stream_.wait();
        break;
      }
      case Op::batch_norm: {
        float* mean = p.saved.data();
        float* var = mean + nd.out.c;
        p.bwd_data.execute(stream_, {{DNNL_ARG_SRC, input(i, 0, false)}, {DNNL_ARG_MEAN, view(p.master_md, mean)},
                                     {DNNL_ARG_VARIANCE, view(p.master_md, var)}, {DNNL_ARG_DIFF_DST, diff_dst},
                                     {DNNL_ARG_SCALE, view(p.master_md, master(i, 0))},
                                     {DNNL_ARG_SHIFT, view(p.master_md, master(i, 1))},
                                     {DNNL_ARG_DIFF_SRC, diff_input(i, 0)},
                                     {DNNL_ARG_DIFF_SCALE, view(p.master_md, master_grad(i, 0))},
                                     {DNNL_ARG_DIFF_SHIFT, view(p.master_md, master_grad(i, 1))}});
        finish_diff_input(i, 0);
        break;
      }
      case Op::relu:
        p.bwd_data.execute(stream_, {{DNNL_ARG_SRC, input(i, 0, false)}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_input(i, 0)}});
        finish_diff_input(i, 0);
        break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        Args args{{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, diff_input(i, 0)}};
        if (p.workspace) args.insert({DNNL_ARG_WORKSPACE, p.workspace});
        p.bwd_data.execute(stream_, args);
        finish_diff_input(i, 0);
        break;
      }
      case Op::add:
        for (std::size_t k = 0; k < 2; ++k) pass_down(i, k, nullptr);
        break;
      case Op::dropout: {
        pass_down(i, 0, &p.saved);
        break;
      }
      case Op::concat:
        for (std::size_t k = 0; k < nd.inputs.size(); ++k) {
          if (!needs_diff(nd.inputs[k])) continue;
          run(p.split[k], diff_dst, diff_input(i, k));
          finish_diff_input(i, k);
        }
        break;
      case Op::softmax_ce: {
        const auto& prob = p.saved;
        const memory d = diff_input(i, 0);
        const auto k = static_cast<std::size_t>(graph_.classes());
        const float scale = nd.loss_weight / static_cast<float>(options_.batch);
        with_element_type(d.get_desc().data_type(), [&](auto t) {
          using T = decltype(t);
          auto* out = static_cast<T*>(d.get_data_handle());
          for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b)
            for (std::size_t c = 0; c < k; ++c)
              out[b * k + c] = narrow<T>(scale * (prob[b * k + c] - (c == static_cast<std::size_t>(labels_[b]) ? 1.f : 0.f)));
        });
        finish_diff_input(i, 0);
        break;
      }
      case Op::input: break;
    }
  }

  // Elementwise gradient to input k of node i: dy, or dy·mask (in the edge's layout, so logical order).
  void pass_down(int i, std::size_t k, const std::vector<float>* mask) {
    const Edge& e = prims_[at(i)].in[k];
    if (!needs_diff(e.from)) return;
    const memory d = diff_input(i, k);
    const memory& dy = diff_[at(i)];
    if (mask) elementwise(d, [](float u, float m) { return u * m; }, dy, view(plain(e.md.dims()), *mask));
    else std::memcpy(d.get_data_handle(), dy.get_data_handle(), e.md.get_size());
    finish_diff_input(i, k);
  }

  Graph graph_;
  EngineOptions options_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  dt compute_ = dt::f32;
  std::vector<memory> out_, diff_;
  std::vector<std::vector<float>> weights_, grads_, velocity_;  // fp32 master copies, plain layout
  std::vector<bool> written_;
  memory scratch_, edge_scratch_;
  std::vector<int> labels_;
  std::vector<Prims> prims_;
  std::uint64_t pass_ = 0;
  double loss_ = 0;
  std::vector<LayerTime> times_;  // with EngineOptions::profile: per node, summed over the steps; the update last

  // Runs fn, adding its wall time to `ms` when profiling (oneDNN's CPU stream runs primitives as they are called).
  template <class Fn> void timed(double& ms, Fn&& fn) {
    if (!options_.profile) return fn();
    const std::int64_t t0 = now_ns();
    fn();
    ms += static_cast<double>(now_ns() - t0) / 1e6;
  }
};

}  // namespace

std::vector<Precision> cpu_precisions() {
  if (cpu_has_bf16()) return {Precision::fp32, Precision::bf16};
  return {Precision::fp32};
}

std::unique_ptr<Engine> make_cpu_engine(const Graph& graph, const EngineOptions& options) {
  return std::make_unique<CpuEngine>(graph, options);
}

int cpu_blocked_activations(const Engine& engine) {
  const auto* cpu = dynamic_cast<const CpuEngine*>(&engine);
  return cpu ? cpu->blocked_activations() : 0;
}

}  // namespace rocebench::models
