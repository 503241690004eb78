#include "rocebench/models/graph.hpp"

#include <cmath>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace rocebench::models {

const char* to_string(Op op) {
  switch (op) {
    case Op::input: return "input";
    case Op::conv: return "conv";
    case Op::batch_norm: return "batch_norm";
    case Op::relu: return "relu";
    case Op::max_pool: return "max_pool";
    case Op::avg_pool: return "avg_pool";
    case Op::global_avg_pool: return "global_avg_pool";
    case Op::add: return "add";
    case Op::concat: return "concat";
    case Op::linear: return "linear";
    case Op::dropout: return "dropout";
    case Op::softmax_ce: return "softmax_ce";
  }
  return "?";
}

std::int64_t Param::size() const {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

Graph::Graph(std::string name, Shape input, int classes) : name_(std::move(name)), classes_(classes) {
  Node n;
  n.out = input;
  nodes_.push_back(n);
}

const Shape& Graph::shape(int x) const {
  if (x < 0 || x >= static_cast<int>(nodes_.size())) throw std::logic_error(fmt::format("{}: no node {}", name_, x));
  return nodes_[static_cast<std::size_t>(x)].out;
}

static Node make_node(Op op, std::vector<int> inputs, Shape out) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.out = out;
  return n;
}

int Graph::add_node(Node n) {
  nodes_.push_back(std::move(n));
  return static_cast<int>(nodes_.size()) - 1;
}

void Graph::add_param(Node& n, ParamRole role, std::vector<std::int64_t> dims) {
  n.params.push_back(static_cast<int>(params_.size()));
  params_.push_back({static_cast<int>(nodes_.size()), role, std::move(dims)});
}

static int window_out(int in, int k, int s, int p, const std::string& where) {
  const int out = (in + 2 * p - k) / s + 1;
  if (out < 1) throw std::logic_error(fmt::format("{}: window {} does not fit input {}", where, k, in));
  return out;
}

static Shape windowed(const Shape& in, int channels, const Window& w, const std::string& where) {
  return {channels, window_out(in.h, w.kh, w.sh, w.ph, where), window_out(in.w, w.kw, w.sw, w.pw, where)};
}

int Graph::conv(int x, int out_channels, Window w, int groups, bool bias) {
  const Shape in = shape(x);
  if (in.c % groups != 0 || out_channels % groups != 0)
    throw std::logic_error(fmt::format("{}: conv groups {} do not divide {}→{}", name_, groups, in.c, out_channels));
  Node n = make_node(Op::conv, {x}, windowed(in, out_channels, w, name_));
  n.window = w;
  n.groups = groups;
  add_param(n, ParamRole::weight, {out_channels, in.c / groups, w.kh, w.kw});
  if (bias) add_param(n, ParamRole::bias, {out_channels});
  return add_node(std::move(n));
}

int Graph::batch_norm(int x, float eps) {
  Node n = make_node(Op::batch_norm, {x}, shape(x));
  n.eps = eps;
  add_param(n, ParamRole::bn_scale, {n.out.c});
  add_param(n, ParamRole::bn_shift, {n.out.c});
  return add_node(std::move(n));
}

int Graph::relu(int x) { return add_node(make_node(Op::relu, {x}, shape(x))); }

int Graph::max_pool(int x, Window w) {
  Node n = make_node(Op::max_pool, {x}, windowed(shape(x), shape(x).c, w, name_));
  n.window = w;
  return add_node(std::move(n));
}

int Graph::avg_pool(int x, Window w) {
  Node n = make_node(Op::avg_pool, {x}, windowed(shape(x), shape(x).c, w, name_));
  n.window = w;
  return add_node(std::move(n));
}

int Graph::global_avg_pool(int x) {
  const Shape in = shape(x);
  Node n = make_node(Op::global_avg_pool, {x}, {in.c, 1, 1});
  n.window = {in.h, in.w, 1, 1, 0, 0};
  return add_node(std::move(n));
}

int Graph::add(int a, int b) {
  if (!(shape(a) == shape(b))) throw std::logic_error(fmt::format("{}: add of different shapes", name_));
  return add_node(make_node(Op::add, {a, b}, shape(a)));
}

int Graph::concat(const std::vector<int>& xs) {
  Shape out = shape(xs.at(0));
  out.c = 0;
  for (int x : xs) {
    const Shape s = shape(x);
    if (s.h != out.h || s.w != out.w) throw std::logic_error(fmt::format("{}: concat of different sizes", name_));
    out.c += s.c;
  }
  return add_node(make_node(Op::concat, xs, out));
}

int Graph::linear(int x, int out_features, bool bias) {
  Node n = make_node(Op::linear, {x}, {out_features, 1, 1});
  add_param(n, ParamRole::weight, {out_features, shape(x).size()});
  if (bias) add_param(n, ParamRole::bias, {out_features});
  return add_node(std::move(n));
}

int Graph::dropout(int x, float p) {
  if (!(p >= 0.f && p < 1.f)) throw std::logic_error(fmt::format("{}: dropout p={} not in [0,1)", name_, p));
  Node n = make_node(Op::dropout, {x}, shape(x));
  n.p = p;
  return add_node(std::move(n));
}

int Graph::softmax_ce(int logits, float loss_weight) {
  if (!(shape(logits) == Shape{classes_, 1, 1}))
    throw std::logic_error(fmt::format("{}: logits are not {} classes", name_, classes_));
  Node n = make_node(Op::softmax_ce, {logits}, {1, 1, 1});
  n.loss_weight = loss_weight;
  return add_node(std::move(n));
}

std::int64_t Graph::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& p : params_) n += p.size();
  return n;
}

double Graph::forward_flops_per_image() const {
  double flops = 0;
  for (int i = 0; i < static_cast<int>(nodes_.size()); ++i) flops += forward_flops_per_image(i);
  return flops;
}

double Graph::forward_flops_per_image(int i) const {
  const Node& n = node(i);
  double macs = 0;
  if (n.op == Op::conv) {
    const Shape in = shape(n.inputs[0]);
    macs = static_cast<double>(n.out.size()) * (in.c / n.groups) * n.window.kh * n.window.kw;
  } else if (n.op == Op::linear) {
    macs = static_cast<double>(n.out.c) * static_cast<double>(shape(n.inputs[0]).size());
  }
  return 2 * macs;
}

std::int64_t Graph::activation_floats_per_image() const {
  std::int64_t n = 0;
  for (const auto& node : nodes_) n += 2 * node.out.size();
  return n;
}

std::vector<std::vector<float>> initial_parameters(const Graph& g, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<float>> values;
  for (const auto& p : g.params()) {
    std::vector<float> v(static_cast<std::size_t>(p.size()), 0.f);
    if (p.role == ParamRole::bn_scale) {
      std::fill(v.begin(), v.end(), 1.f);
    } else if (p.role == ParamRole::weight && g.node(p.node).op == Op::linear) {
      // torch.nn.Linear's default, U(±1/√fan_in): He-normal here gave VGG16's three linear layers
      // logits of ~30 at the start (loss 33.9, NaN by the third step at lr 0.01).
      const double bound = 1.0 / std::sqrt(static_cast<double>(p.size() / p.dims[0]));
      std::uniform_real_distribution<float> uniform(static_cast<float>(-bound), static_cast<float>(bound));
      for (auto& x : v) x = uniform(rng);
    } else if (p.role == ParamRole::weight) {
      // torchvision's kaiming_normal_(mode="fan_out") for convolutions ([out][in/groups][kh][kw]).
      const double fan_out = static_cast<double>(p.size() / p.dims[1]);
      std::normal_distribution<float> normal(0.f, static_cast<float>(std::sqrt(2.0 / fan_out)));
      for (auto& x : v) x = normal(rng);
    }
    values.push_back(std::move(v));
  }
  return values;
}

}  // namespace rocebench::models
