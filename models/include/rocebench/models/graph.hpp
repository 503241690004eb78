#pragma once
// The layer graph: nodes in topological order (each node's inputs come before it), their output
// shapes per image, and the parameter tensors they own. Engines execute it; the zoo builds it.
#include <cstdint>
#include <string>
#include <vector>

namespace rocebench::models {

// Per-image shape, NCHW without the N. A flat vector is {c, 1, 1}.
struct Shape {
  int c = 0, h = 1, w = 1;
  std::int64_t size() const { return std::int64_t{c} * h * w; }
  bool operator==(const Shape&) const = default;
};

enum class Op {
  input,
  conv,             // inputs: x; params: weight [oc, ic/groups, kh, kw] (+ bias [oc])
  batch_norm,       // training mode (batch statistics), keeps running statistics; params: scale, shift
  relu,
  max_pool,
  avg_pool,         // counts padding in the divisor, like torch's default count_include_pad=True
  global_avg_pool,
  add,              // residual add of two equally shaped inputs
  concat,           // along channels
  linear,           // flattens its input; params: weight [out, in] (+ bias [out])
  dropout,          // inverted dropout: keeps with 1-p and scales by 1/(1-p)
  softmax_ce,       // mean softmax cross-entropy over the batch against the labels, times loss_weight
};
const char* to_string(Op op);

// Kernel, stride and padding of a convolution or pooling window.
struct Window {
  int kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;
};
// A square window: k×k, stride s, padding p.
inline Window square(int k, int s = 1, int p = 0) { return {k, k, s, s, p, p}; }

// What a parameter is for: the optimizer exempts biases and batch-norm parameters from LARS and
// weight decay's trust ratio, as the LARS paper does.
enum class ParamRole { weight, bias, bn_scale, bn_shift };

struct Param {
  int node = 0;
  ParamRole role = ParamRole::weight;
  std::vector<std::int64_t> dims;
  std::int64_t size() const;
};

struct Node {
  Op op = Op::input;
  std::vector<int> inputs;
  Shape out;
  Window window;         // conv and pooling
  int groups = 1;        // conv
  float eps = 1e-5f;     // batch_norm
  float p = 0.f;         // dropout
  float loss_weight = 1.f;  // softmax_ce
  std::vector<int> params;  // indices into Graph::params()
};

class Graph {
 public:
  Graph(std::string name, Shape input, int classes);

  int input() const { return 0; }
  int conv(int x, int out_channels, Window w, int groups = 1, bool bias = false);
  int batch_norm(int x, float eps = 1e-5f);
  int relu(int x);
  int max_pool(int x, Window w);
  int avg_pool(int x, Window w);
  int global_avg_pool(int x);
  int add(int a, int b);
  int concat(const std::vector<int>& xs);
  int linear(int x, int out_features, bool bias = true);
  int dropout(int x, float p);
  // The logits must have `classes` channels and be 1×1.
  int softmax_ce(int logits, float loss_weight = 1.f);

  const std::string& name() const { return name_; }
  int classes() const { return classes_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int i) const { return nodes_.at(static_cast<std::size_t>(i)); }
  const std::vector<Param>& params() const { return params_; }
  Shape input_shape() const { return nodes_.front().out; }

  std::int64_t parameter_count() const;
  // Forward FLOPs of one image: 2 × multiply-accumulates of conv and linear layers (the convention of
  // the ResNet paper's "3.8 × 10^9 FLOPs" counted as multiply-adds, doubled); elementwise layers,
  // pooling and normalisation are not counted (under 1% for the zoo's models).
  double forward_flops_per_image() const;
  // Node i's share of it.
  double forward_flops_per_image(int i) const;
  // Activations kept for backward, per image, in floats (every node's output and its gradient).
  std::int64_t activation_floats_per_image() const;

 private:
  int add_node(Node n);
  void add_param(Node& n, ParamRole role, std::vector<std::int64_t> dims);
  const Shape& shape(int x) const;
  std::string name_;
  int classes_;
  std::vector<Node> nodes_;
  std::vector<Param> params_;
};

// Deterministic initial parameters: He-normal convolution weights (fan-in), linear weights
// U(±1/√fan_in) as torch.nn.Linear, zero biases, batch norm scale 1 and shift 0. Every engine starts from these, so runs with the same seed start identically.
std::vector<std::vector<float>> initial_parameters(const Graph& g, std::uint64_t seed);

}  // namespace rocebench::models
