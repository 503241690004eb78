// The CPU engine: oneDNN primitives for convolution, batch norm, ReLU, pooling and linear layers,
// plain loops for the layout-simple rest (add, concat, dropout, softmax cross-entropy). Activations
// are NCHW fp32; each node owns its output and the gradient of its output.
#include <cmath>
#include <cstring>

#include <dnnl.hpp>
#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {
namespace {

using dnnl::memory;
using tag = memory::format_tag;
constexpr auto f32 = memory::data_type::f32;

memory::dims nchw(int n, const Shape& s) { return {n, s.c, s.h, s.w}; }
memory::desc plain(const memory::dims& d) {
  const tag t = d.size() == 1 ? tag::x : d.size() == 2 ? tag::nc : d.size() == 4 ? tag::nchw : tag::goihw;
  return memory::desc(d, f32, t);
}

// Primitives of one node; which ones exist depends on its op.
struct Prims {
  dnnl::primitive fwd, bwd_data, bwd_weights;
  memory::desc src_md, dst_md, weights_md, bias_md, ws_md;
  std::vector<float> workspace;   // max pooling indices
  std::vector<float> saved;       // batch norm mean+variance, dropout scale, softmax probabilities
  std::vector<float> running_mean, running_var;
};

class CpuEngine final : public Engine {
 public:
  CpuEngine(const Graph& graph, const EngineOptions& options)
      : graph_(graph), options_(options), eng_(dnnl::engine::kind::cpu, 0), stream_(eng_) {
    if (options.precision != Precision::fp32)
      throw InputError(fmt::format("engine cpu supports precision fp32, not {}", to_string(options.precision)));
    const int n = options.batch;
    const auto& nodes = graph.nodes();
    out_.resize(nodes.size());
    diff_.resize(nodes.size());
    written_.resize(nodes.size());
    prims_.resize(nodes.size());
    std::size_t largest = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const auto size = static_cast<std::size_t>(nodes[i].out.size() * n);
      out_[i].resize(size);
      if (i > 0 || options.input_gradient) diff_[i].resize(size);
      largest = std::max(largest, size);
    }
    scratch_.resize(largest);
    weights_ = initial_parameters(graph, options.seed);
    for (const auto& w : weights_) {
      grads_.emplace_back(w.size(), 0.f);
      velocity_.emplace_back(w.size(), 0.f);
    }
    labels_.resize(static_cast<std::size_t>(n));
    for (std::size_t i = 1; i < nodes.size(); ++i) build(static_cast<int>(i));
  }

  const Graph& graph() const override { return graph_; }
  const EngineOptions& options() const override { return options_; }

  void set_batch(std::span<const float> images, std::span<const int> labels) override {
    if (images.size() != out_[0].size() || labels.size() != labels_.size())
      throw std::invalid_argument("set_batch: sizes do not match the batch");
    std::copy(images.begin(), images.end(), out_[0].begin());
    std::copy(labels.begin(), labels.end(), labels_.begin());
  }

  void forward() override {
    loss_ = 0;
    for (std::size_t i = 1; i < graph_.nodes().size(); ++i) forward_node(static_cast<int>(i));
    stream_.wait();
    ++pass_;
  }

  void backward(const GradientCallback& ready) override {
    std::fill(written_.begin(), written_.end(), false);
    for (int i = static_cast<int>(graph_.nodes().size()) - 1; i > 0; --i) {
      backward_node(i);
      for (int p : graph_.node(i).params)
        if (ready) ready({p, grads_[static_cast<std::size_t>(p)].data(), graph_.params()[static_cast<std::size_t>(p)].size(), false});
    }
  }

  void update(const SgdOptions& sgd, double lr) override {
    for (std::size_t p = 0; p < weights_.size(); ++p)
      sgd_update(graph_.params()[p].role, weights_[p], grads_[p], velocity_[p], lr, sgd);
  }

  void synchronize() override { stream_.wait(); }
  double loss() override { return loss_; }

  std::vector<float> parameter(int index) const override { return weights_.at(static_cast<std::size_t>(index)); }
  void set_parameter(int index, std::span<const float> values) override {
    auto& w = weights_.at(static_cast<std::size_t>(index));
    if (values.size() != w.size()) throw std::invalid_argument("set_parameter: wrong size");
    std::copy(values.begin(), values.end(), w.begin());
  }
  std::vector<float> gradient(int index) const override { return grads_.at(static_cast<std::size_t>(index)); }
  std::vector<float> input_gradient() const override { return diff_[0]; }
  std::pair<std::vector<float>, std::vector<float>> running_stats(int node) const override {
    const auto& p = prims_.at(static_cast<std::size_t>(node));
    return {p.running_mean, p.running_var};
  }

  std::int64_t bytes_allocated() const override {
    std::int64_t floats = static_cast<std::int64_t>(scratch_.size());
    for (const auto* set : {&out_, &diff_, &weights_, &grads_, &velocity_})
      for (const auto& v : *set) floats += static_cast<std::int64_t>(v.size());
    for (const auto& p : prims_) floats += static_cast<std::int64_t>(p.workspace.size() + p.saved.size());
    return floats * 4;
  }

 private:
  const Node& node(int i) const { return graph_.node(i); }
  std::size_t at(int i) const { return static_cast<std::size_t>(i); }
  memory mem(const memory::desc& md, float* p) { return memory(md, eng_, p); }
  memory mem(const memory::desc& md, const std::vector<float>& v) { return memory(md, eng_, const_cast<float*>(v.data())); }
  float* weight(int node_index, std::size_t k) { return weights_[at(node(node_index).params[k])].data(); }
  float* grad(int node_index, std::size_t k) { return grads_[at(node(node_index).params[k])].data(); }
  bool needs_diff(int i) const { return !diff_[at(i)].empty(); }

  // Where backward writes the gradient for node j: its own buffer the first time, else the scratch
  // buffer, which finish_diff() then adds in (j feeds several consumers).
  // A node without a gradient buffer (the input, unless asked for) gets the scratch, discarded.
  float* begin_diff(int j) { return written_[at(j)] || !needs_diff(j) ? scratch_.data() : diff_[at(j)].data(); }
  void finish_diff(int j) {
    if (!needs_diff(j)) return;
    if (written_[at(j)]) {
      auto& d = diff_[at(j)];
      for (std::size_t k = 0; k < d.size(); ++k) d[k] += scratch_[k];
    }
    written_[at(j)] = true;
  }

  void build(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const int n = options_.batch;
    const Shape in = node(nd.inputs[0]).out;
    p.src_md = plain(nchw(n, in));
    p.dst_md = plain(nchw(n, nd.out));
    const auto fwd = dnnl::prop_kind::forward_training;
    switch (nd.op) {
      case Op::conv: {
        const Window& w = nd.window;
        const memory::dims strides{w.sh, w.sw}, pad{w.ph, w.pw};
        p.weights_md = nd.groups == 1 ? plain({nd.out.c, in.c, w.kh, w.kw})
                                      : plain({nd.groups, nd.out.c / nd.groups, in.c / nd.groups, w.kh, w.kw});
        const bool bias = nd.params.size() > 1;
        if (bias) p.bias_md = plain({nd.out.c});
        const auto algo = dnnl::algorithm::convolution_direct;
        auto fd = bias ? dnnl::convolution_forward::desc(fwd, algo, p.src_md, p.weights_md, p.bias_md, p.dst_md, strides, pad, pad)
                       : dnnl::convolution_forward::desc(fwd, algo, p.src_md, p.weights_md, p.dst_md, strides, pad, pad);
        dnnl::convolution_forward::primitive_desc fpd(fd, eng_);
        p.fwd = dnnl::convolution_forward(fpd);
        p.bwd_data = dnnl::convolution_backward_data(dnnl::convolution_backward_data::primitive_desc(
            {algo, p.src_md, p.weights_md, p.dst_md, strides, pad, pad}, eng_, fpd));
        auto wd = bias ? dnnl::convolution_backward_weights::desc(algo, p.src_md, p.weights_md, p.bias_md, p.dst_md, strides, pad, pad)
                       : dnnl::convolution_backward_weights::desc(algo, p.src_md, p.weights_md, p.dst_md, strides, pad, pad);
        p.bwd_weights = dnnl::convolution_backward_weights(dnnl::convolution_backward_weights::primitive_desc(wd, eng_, fpd));
        break;
      }
      case Op::linear: {
        p.src_md = plain(nchw(n, in));
        p.weights_md = plain({nd.out.c, in.c, in.h, in.w});
        p.dst_md = plain({n, nd.out.c});
        const bool bias = nd.params.size() > 1;
        if (bias) p.bias_md = plain({nd.out.c});
        auto fd = bias ? dnnl::inner_product_forward::desc(fwd, p.src_md, p.weights_md, p.bias_md, p.dst_md)
                       : dnnl::inner_product_forward::desc(fwd, p.src_md, p.weights_md, p.dst_md);
        dnnl::inner_product_forward::primitive_desc fpd(fd, eng_);
        p.fwd = dnnl::inner_product_forward(fpd);
        p.bwd_data = dnnl::inner_product_backward_data(dnnl::inner_product_backward_data::primitive_desc(
            {p.src_md, p.weights_md, p.dst_md}, eng_, fpd));
        auto wd = bias ? dnnl::inner_product_backward_weights::desc(p.src_md, p.weights_md, p.bias_md, p.dst_md)
                       : dnnl::inner_product_backward_weights::desc(p.src_md, p.weights_md, p.dst_md);
        p.bwd_weights = dnnl::inner_product_backward_weights(dnnl::inner_product_backward_weights::primitive_desc(wd, eng_, fpd));
        break;
      }
      case Op::batch_norm: {
        const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
        dnnl::batch_normalization_forward::primitive_desc fpd({fwd, p.src_md, nd.eps, flags}, eng_);
        p.fwd = dnnl::batch_normalization_forward(fpd);
        p.bwd_data = dnnl::batch_normalization_backward(dnnl::batch_normalization_backward::primitive_desc(
            {dnnl::prop_kind::backward, p.src_md, p.src_md, nd.eps, flags}, eng_, fpd));
        p.weights_md = plain({nd.out.c});
        p.saved.resize(2 * static_cast<std::size_t>(nd.out.c));
        p.running_mean.assign(static_cast<std::size_t>(nd.out.c), 0.f);
        p.running_var.assign(static_cast<std::size_t>(nd.out.c), 1.f);
        break;
      }
      case Op::relu: {
        dnnl::eltwise_forward::primitive_desc fpd({fwd, dnnl::algorithm::eltwise_relu, p.src_md, 0.f, 0.f}, eng_);
        p.fwd = dnnl::eltwise_forward(fpd);
        p.bwd_data = dnnl::eltwise_backward(dnnl::eltwise_backward::primitive_desc(
            {dnnl::algorithm::eltwise_relu, p.src_md, p.src_md, 0.f, 0.f}, eng_, fpd));
        break;
      }
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        const Window& w = nd.window;
        const memory::dims strides{w.sh, w.sw}, kernel{w.kh, w.kw}, pad{w.ph, w.pw};
        const auto algo = nd.op == Op::max_pool  ? dnnl::algorithm::pooling_max
                          : nd.op == Op::avg_pool ? dnnl::algorithm::pooling_avg_include_padding
                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
        dnnl::pooling_forward::primitive_desc fpd({fwd, algo, p.src_md, p.dst_md, strides, kernel, pad, pad}, eng_);
        p.fwd = dnnl::pooling_forward(fpd);
        p.bwd_data = dnnl::pooling_backward(dnnl::pooling_backward::primitive_desc(
            {algo, p.src_md, p.dst_md, strides, kernel, pad, pad}, eng_, fpd));
        if (nd.op == Op::max_pool) {
          p.ws_md = fpd.workspace_desc();
          p.workspace.resize((p.ws_md.get_size() + 3) / 4);
        }
        break;
      }
      case Op::dropout: p.saved.resize(out_[at(i)].size()); break;
      case Op::softmax_ce: p.saved.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(in.c)); break;
      case Op::input:
      case Op::add:
      case Op::concat: break;
    }
  }

  void forward_node(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const int x = nd.inputs[0];
    auto src = mem(p.src_md, out_[at(x)]);
    auto dst = mem(p.dst_md, out_[at(i)]);
    switch (nd.op) {
      case Op::conv:
      case Op::linear: {
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, mem(p.weights_md, weight(i, 0))}, {DNNL_ARG_DST, dst}};
        if (nd.params.size() > 1) args.insert({DNNL_ARG_BIAS, mem(p.bias_md, weight(i, 1))});
        p.fwd.execute(stream_, args);
        break;
      }
      case Op::batch_norm: {
        const auto c = static_cast<std::size_t>(nd.out.c);
        float* mean = p.saved.data();
        float* var = mean + c;
        p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCALE, mem(p.weights_md, weight(i, 0))},
                                {DNNL_ARG_SHIFT, mem(p.weights_md, weight(i, 1))}, {DNNL_ARG_MEAN, mem(p.weights_md, mean)},
                                {DNNL_ARG_VARIANCE, mem(p.weights_md, var)}});
        stream_.wait();
        const double count = static_cast<double>(options_.batch) * nd.out.h * nd.out.w;
        const float unbias = count > 1 ? static_cast<float>(count / (count - 1)) : 1.f;
        for (std::size_t k = 0; k < c; ++k) {
          p.running_mean[k] = 0.9f * p.running_mean[k] + 0.1f * mean[k];
          p.running_var[k] = 0.9f * p.running_var[k] + 0.1f * var[k] * unbias;
        }
        break;
      }
      case Op::relu: p.fwd.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}); break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
        if (!p.workspace.empty()) args.insert({DNNL_ARG_WORKSPACE, mem(p.ws_md, p.workspace)});
        p.fwd.execute(stream_, args);
        break;
      }
      case Op::add: {
        stream_.wait();
        const auto& a = out_[at(nd.inputs[0])];
        const auto& b = out_[at(nd.inputs[1])];
        auto& y = out_[at(i)];
        for (std::size_t k = 0; k < y.size(); ++k) y[k] = a[k] + b[k];
        break;
      }
      case Op::concat: stream_.wait(); concat_forward(i); break;
      case Op::dropout: {
        stream_.wait();
        const auto& xs = out_[at(x)];
        auto& y = out_[at(i)];
        const float scale = 1.f / (1.f - nd.p);
        for (std::size_t k = 0; k < y.size(); ++k) {
          p.saved[k] = dropout_keeps(options_.seed, pass_, i, static_cast<std::int64_t>(k), nd.p) ? scale : 0.f;
          y[k] = xs[k] * p.saved[k];
        }
        break;
      }
      case Op::softmax_ce: stream_.wait(); loss_ += softmax_ce_forward(i); break;
      case Op::input: break;
    }
  }

  // Sizes of the per-image channel blocks a concat joins, in floats.
  std::vector<std::size_t> block_sizes(const Node& nd) const {
    std::vector<std::size_t> sizes;
    for (int x : nd.inputs) sizes.push_back(static_cast<std::size_t>(node(x).out.size()));
    return sizes;
  }

  void concat_forward(int i) {
    const Node& nd = node(i);
    const auto sizes = block_sizes(nd);
    const auto image = static_cast<std::size_t>(nd.out.size());
    float* y = out_[at(i)].data();
    for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b) {
      std::size_t offset = b * image;
      for (std::size_t k = 0; k < sizes.size(); ++k) {
        std::memcpy(y + offset, out_[at(nd.inputs[k])].data() + b * sizes[k], sizes[k] * 4);
        offset += sizes[k];
      }
    }
  }

  double softmax_ce_forward(int i) {
    const Node& nd = node(i);
    auto& prob = prims_[at(i)].saved;
    const auto& logits = out_[at(nd.inputs[0])];
    const auto k = static_cast<std::size_t>(graph_.classes());
    double total = 0;
    for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b) {
      const float* z = logits.data() + b * k;
      const float top = *std::max_element(z, z + k);
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += std::exp(static_cast<double>(z[c] - top));
      for (std::size_t c = 0; c < k; ++c) prob[b * k + c] = static_cast<float>(std::exp(static_cast<double>(z[c] - top)) / sum);
      const auto label = static_cast<std::size_t>(labels_[b]);
      total += std::log(sum) - static_cast<double>(z[label] - top);
    }
    const double loss = nd.loss_weight * total / options_.batch;
    out_[at(i)].assign(out_[at(i)].size(), static_cast<float>(loss));
    return loss;
  }

  void backward_node(int i) {
    const Node& nd = node(i);
    Prims& p = prims_[at(i)];
    const int x = nd.inputs[0];
    auto src = mem(p.src_md, out_[at(x)]);
    auto diff_dst = mem(p.dst_md, diff_[at(i)]);
    switch (nd.op) {
      case Op::conv:
      case Op::linear: {
        std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst},
                                             {DNNL_ARG_DIFF_WEIGHTS, mem(p.weights_md, grad(i, 0))}};
        if (nd.params.size() > 1) args.insert({DNNL_ARG_DIFF_BIAS, mem(p.bias_md, grad(i, 1))});
        p.bwd_weights.execute(stream_, args);
        if (needs_diff(x)) {
          p.bwd_data.execute(stream_, {{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_WEIGHTS, mem(p.weights_md, weight(i, 0))},
                                       {DNNL_ARG_DIFF_SRC, mem(p.src_md, begin_diff(x))}});
          stream_.wait();
          finish_diff(x);
        }
        break;
      }
      case Op::batch_norm: {
        float* mean = p.saved.data();
        float* var = mean + nd.out.c;
        p.bwd_data.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_MEAN, mem(p.weights_md, mean)},
                                     {DNNL_ARG_VARIANCE, mem(p.weights_md, var)}, {DNNL_ARG_DIFF_DST, diff_dst},
                                     {DNNL_ARG_SCALE, mem(p.weights_md, weight(i, 0))},
                                     {DNNL_ARG_SHIFT, mem(p.weights_md, weight(i, 1))},
                                     {DNNL_ARG_DIFF_SRC, mem(p.src_md, begin_diff(x))},
                                     {DNNL_ARG_DIFF_SCALE, mem(p.weights_md, grad(i, 0))},
                                     {DNNL_ARG_DIFF_SHIFT, mem(p.weights_md, grad(i, 1))}});
        stream_.wait();
        finish_diff(x);
        break;
      }
      case Op::relu:
        p.bwd_data.execute(stream_, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, mem(p.src_md, begin_diff(x))}});
        stream_.wait();
        finish_diff(x);
        break;
      case Op::max_pool:
      case Op::avg_pool:
      case Op::global_avg_pool: {
        std::unordered_map<int, memory> args{{DNNL_ARG_DIFF_DST, diff_dst}, {DNNL_ARG_DIFF_SRC, mem(p.src_md, begin_diff(x))}};
        if (!p.workspace.empty()) args.insert({DNNL_ARG_WORKSPACE, mem(p.ws_md, p.workspace)});
        p.bwd_data.execute(stream_, args);
        stream_.wait();
        finish_diff(x);
        break;
      }
      case Op::add:
        for (int j : nd.inputs) pass_down(j, diff_[at(i)].data(), nullptr);
        break;
      case Op::dropout: pass_down(x, diff_[at(i)].data(), p.saved.data()); break;
      case Op::concat: {
        const auto sizes = block_sizes(nd);
        const auto image = static_cast<std::size_t>(nd.out.size());
        std::size_t offset = 0;
        for (std::size_t k = 0; k < sizes.size(); ++k) {
          const int j = nd.inputs[k];
          float* d = begin_diff(j);
          for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b)
            std::memcpy(d + b * sizes[k], diff_[at(i)].data() + b * image + offset, sizes[k] * 4);
          finish_diff(j);
          offset += sizes[k];
        }
        break;
      }
      case Op::softmax_ce: {
        const auto& prob = p.saved;
        float* d = begin_diff(x);
        const auto k = static_cast<std::size_t>(graph_.classes());
        const float scale = nd.loss_weight / static_cast<float>(options_.batch);
        for (std::size_t b = 0; b < static_cast<std::size_t>(options_.batch); ++b)
          for (std::size_t c = 0; c < k; ++c)
            d[b * k + c] = scale * (prob[b * k + c] - (c == static_cast<std::size_t>(labels_[b]) ? 1.f : 0.f));
        finish_diff(x);
        break;
      }
      case Op::input: break;
    }
  }

  // Elementwise gradient to input j: dy, or dy·mask.
  void pass_down(int j, const float* dy, const float* mask) {
    if (!needs_diff(j)) return;
    float* d = begin_diff(j);
    const std::size_t size = diff_[at(j)].size();
    for (std::size_t k = 0; k < size; ++k) d[k] = mask ? dy[k] * mask[k] : dy[k];
    finish_diff(j);
  }

  Graph graph_;
  EngineOptions options_;
  dnnl::engine eng_;
  dnnl::stream stream_;
  std::vector<std::vector<float>> out_, diff_, weights_, grads_, velocity_;
  std::vector<bool> written_;
  std::vector<float> scratch_;
  std::vector<int> labels_;
  std::vector<Prims> prims_;
  std::uint64_t pass_ = 0;
  double loss_ = 0;
};

}  // namespace

std::unique_ptr<Engine> make_cpu_engine(const Graph& graph, const EngineOptions& options) {
  return std::make_unique<CpuEngine>(graph, options);
}

}  // namespace rocebench::models
