#include "rocebench/models/zoo.hpp"

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench::models {
namespace {

// conv (no bias) → batch norm → ReLU: torchvision's BasicConv2d and ResNet's conv-bn-relu.
int conv_bn_relu(Graph& g, int x, int out, Window w, float eps = 1e-5f) {
  return g.relu(g.batch_norm(g.conv(x, out, w), eps));
}

int bottleneck(Graph& g, int x, int width, int stride) {
  const int out = width * 4;
  int y = conv_bn_relu(g, x, width, square(1));
  y = conv_bn_relu(g, y, width, square(3, stride, 1));
  y = g.batch_norm(g.conv(y, out, square(1)));
  int shortcut = x;
  if (stride != 1 || g.node(x).out.c != out) shortcut = g.batch_norm(g.conv(x, out, square(1, stride)));
  return g.relu(g.add(y, shortcut));
}

int basic_block(Graph& g, int x, int out, int stride) {
  int y = conv_bn_relu(g, x, out, square(3, stride, 1));
  y = g.batch_norm(g.conv(y, out, square(3, 1, 1)));
  int shortcut = x;
  if (stride != 1 || g.node(x).out.c != out) shortcut = g.batch_norm(g.conv(x, out, square(1, stride)));
  return g.relu(g.add(y, shortcut));
}

// Inception v3 blocks, named as in torchvision/models/inception.py.
constexpr float kInceptionEps = 0.001f;
int bc(Graph& g, int x, int out, Window w) { return conv_bn_relu(g, x, out, w, kInceptionEps); }
Window k1x7() { return {1, 7, 1, 1, 0, 3}; }
Window k7x1() { return {7, 1, 1, 1, 3, 0}; }
Window k1x3() { return {1, 3, 1, 1, 0, 1}; }
Window k3x1() { return {3, 1, 1, 1, 1, 0}; }

int inception_a(Graph& g, int x, int pool_features) {
  const int b1 = bc(g, x, 64, square(1));
  const int b5 = bc(g, bc(g, x, 48, square(1)), 64, square(5, 1, 2));
  const int b3 = bc(g, bc(g, bc(g, x, 64, square(1)), 96, square(3, 1, 1)), 96, square(3, 1, 1));
  const int bp = bc(g, g.avg_pool(x, square(3, 1, 1)), pool_features, square(1));
  return g.concat({b1, b5, b3, bp});
}

int inception_b(Graph& g, int x) {
  const int b3 = bc(g, x, 384, square(3, 2));
  const int bd = bc(g, bc(g, bc(g, x, 64, square(1)), 96, square(3, 1, 1)), 96, square(3, 2));
  return g.concat({b3, bd, g.max_pool(x, square(3, 2))});
}

int inception_c(Graph& g, int x, int c7) {
  const int b1 = bc(g, x, 192, square(1));
  const int b7 = bc(g, bc(g, bc(g, x, c7, square(1)), c7, k1x7()), 192, k7x1());
  int bd = bc(g, x, c7, square(1));
  bd = bc(g, bc(g, bc(g, bc(g, bd, c7, k7x1()), c7, k1x7()), c7, k7x1()), 192, k1x7());
  const int bp = bc(g, g.avg_pool(x, square(3, 1, 1)), 192, square(1));
  return g.concat({b1, b7, bd, bp});
}

int inception_d(Graph& g, int x) {
  const int b3 = bc(g, bc(g, x, 192, square(1)), 320, square(3, 2));
  const int b7 = bc(g, bc(g, bc(g, bc(g, x, 192, square(1)), 192, k1x7()), 192, k7x1()), 192, square(3, 2));
  return g.concat({b3, b7, g.max_pool(x, square(3, 2))});
}

int inception_e(Graph& g, int x) {
  const int b1 = bc(g, x, 320, square(1));
  const int b3 = bc(g, x, 384, square(1));
  const int b3s = g.concat({bc(g, b3, 384, k1x3()), bc(g, b3, 384, k3x1())});
  const int bd = bc(g, bc(g, x, 448, square(1)), 384, square(3, 1, 1));
  const int bds = g.concat({bc(g, bd, 384, k1x3()), bc(g, bd, 384, k3x1())});
  const int bp = bc(g, g.avg_pool(x, square(3, 1, 1)), 192, square(1));
  return g.concat({b1, b3s, bds, bp});
}

}  // namespace

Graph resnet(int depth) {
  std::vector<int> blocks;
  if (depth == 50) blocks = {3, 4, 6, 3};
  else if (depth == 152) blocks = {3, 8, 36, 3};
  else throw std::logic_error(fmt::format("resnet{}: only 50 and 152 are defined", depth));
  Graph g(fmt::format("resnet{}", depth), {3, 224, 224}, 1000);
  int x = conv_bn_relu(g, g.input(), 64, square(7, 2, 3));
  x = g.max_pool(x, square(3, 2, 1));
  for (int stage = 0; stage < 4; ++stage)
    for (int b = 0; b < blocks[static_cast<std::size_t>(stage)]; ++b)
      x = bottleneck(g, x, 64 << stage, b == 0 && stage > 0 ? 2 : 1);
  g.softmax_ce(g.linear(g.global_avg_pool(x), 1000));
  return g;
}

Graph vgg16() {
  Graph g("vgg16", {3, 224, 224}, 1000);
  int x = g.input();
  for (int c : {64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0})
    x = c == 0 ? g.max_pool(x, square(2, 2)) : g.relu(g.conv(x, c, square(3, 1, 1), 1, true));
  // torchvision's AdaptiveAvgPool2d((7, 7)) is the identity at 224×224.
  x = g.dropout(g.relu(g.linear(x, 4096)), 0.5f);
  x = g.dropout(g.relu(g.linear(x, 4096)), 0.5f);
  g.softmax_ce(g.linear(x, 1000));
  return g;
}

Graph alexnet() {
  Graph g("alexnet", {3, 224, 224}, 1000);
  int x = g.max_pool(g.relu(g.conv(g.input(), 64, square(11, 4, 2), 1, true)), square(3, 2));
  x = g.max_pool(g.relu(g.conv(x, 192, square(5, 1, 2), 1, true)), square(3, 2));
  x = g.relu(g.conv(x, 384, square(3, 1, 1), 1, true));
  x = g.relu(g.conv(x, 256, square(3, 1, 1), 1, true));
  x = g.max_pool(g.relu(g.conv(x, 256, square(3, 1, 1), 1, true)), square(3, 2));
  // AdaptiveAvgPool2d((6, 6)) is the identity at 224×224.
  x = g.relu(g.linear(g.dropout(x, 0.5f), 4096));
  x = g.relu(g.linear(g.dropout(x, 0.5f), 4096));
  g.softmax_ce(g.linear(x, 1000));
  return g;
}

Graph inception_v3(bool aux_logits) {
  Graph g(aux_logits ? "inception3_aux" : "inception3", {3, 299, 299}, 1000);
  int x = bc(g, g.input(), 32, square(3, 2));
  x = bc(g, x, 32, square(3));
  x = bc(g, x, 64, square(3, 1, 1));
  x = g.max_pool(x, square(3, 2));
  x = bc(g, x, 80, square(1));
  x = bc(g, x, 192, square(3));
  x = g.max_pool(x, square(3, 2));
  x = inception_a(g, x, 32);
  x = inception_a(g, x, 64);
  x = inception_a(g, x, 64);
  x = inception_b(g, x);
  for (int c7 : {128, 160, 160, 192}) x = inception_c(g, x, c7);
  if (aux_logits) {
    int a = g.avg_pool(x, square(5, 3));
    a = bc(g, bc(g, a, 128, square(1)), 768, square(5));
    g.softmax_ce(g.linear(g.global_avg_pool(a), 1000), 0.4f);
  }
  x = inception_d(g, x);
  x = inception_e(g, x);
  x = inception_e(g, x);
  g.softmax_ce(g.linear(g.dropout(g.global_avg_pool(x), 0.5f), 1000));
  return g;
}

Graph resnet20_cifar() {
  Graph g("resnet20_cifar", {3, 32, 32}, 10);
  int x = conv_bn_relu(g, g.input(), 16, square(3, 1, 1));
  for (int stage = 0; stage < 3; ++stage)
    for (int b = 0; b < 3; ++b) x = basic_block(g, x, 16 << stage, b == 0 && stage > 0 ? 2 : 1);
  g.softmax_ce(g.linear(g.global_avg_pool(x), 10));
  return g;
}

// Small, and without batch norm or dropout, so that k ranks of batch b train exactly as one rank of
// k·b (their statistics and masks would be each rank's own): what `train --check` runs.
Graph cnn_cifar() {
  Graph g("cnn_cifar", {3, 32, 32}, 10);
  int x = g.max_pool(g.relu(g.conv(g.input(), 16, square(3, 1, 1), 1, true)), square(2, 2));
  x = g.max_pool(g.relu(g.conv(x, 32, square(3, 1, 1), 1, true)), square(2, 2));
  g.softmax_ce(g.linear(g.global_avg_pool(g.relu(g.conv(x, 64, square(3, 1, 1), 1, true))), 10));
  return g;
}

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> models = {
      {"resnet50", "ResNet-50 v1.5, 224×224 (torchvision resnet50)", [] { return resnet(50); }},
      {"resnet152", "ResNet-152 v1.5, 224×224 (torchvision resnet152)", [] { return resnet(152); }},
      {"vgg16", "VGG16 without batch norm, 224×224 (torchvision vgg16)", vgg16},
      {"inception3", "Inception v3, 299×299, no auxiliary head (torchvision aux_logits=False)",
       [] { return inception_v3(false); }},
      {"inception3_aux", "Inception v3, 299×299, auxiliary head weighted 0.4 (torchvision aux_logits=True)",
       [] { return inception_v3(true); }},
      {"alexnet", "AlexNet, 224×224 (torchvision alexnet)", alexnet},
      {"resnet20_cifar", "ResNet-20 for CIFAR, 32×32, 10 classes, projection shortcuts", resnet20_cifar},
      {"cnn_cifar", "three convolutions for CIFAR, 32×32, 10 classes, no batch norm (for train --check)", cnn_cifar},
  };
  return models;
}

Graph build_model(const std::string& name) {
  std::string names;
  for (const auto& m : zoo()) {
    if (m.name == name) return m.build();
    names += (names.empty() ? "" : ", ") + m.name;
  }
  throw InputError(fmt::format("unknown model '{}'; models: {}", name, names));
}

}  // namespace rocebench::models
