// Every layer type's backward on the CPU engine against central finite differences of the float64
// reference forward pass, on tiny graphs (each ends in linear → softmax cross-entropy).
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "reference.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {
namespace {

using testing::ReferenceBatch;
using testing::reference_loss;

constexpr std::uint64_t kSeed = 7;

struct Checked {
  int values = 0;
  double worst = 0;  // largest |analytic − numeric| / (atol + rtol·|numeric|)
};

// Compares the engine's gradients of every parameter element and every input element with
// central differences of the reference loss.
Checked check_gradients(const Graph& g, int batch) {
  auto engine = make_cpu_engine(g, {.batch = batch, .seed = kSeed, .input_gradient = true});
  const auto [images, labels] = synthetic_batch(g, batch, 3);
  engine->set_batch(images, labels);
  engine->forward();
  engine->backward({});

  ReferenceBatch in{{images.begin(), images.end()}, labels, batch, kSeed, 0};
  std::vector<std::vector<double>> params;
  for (int p = 0; p < static_cast<int>(g.params().size()); ++p) {
    const auto w = engine->parameter(p);
    params.emplace_back(w.begin(), w.end());
  }
  const double loss = reference_loss(g, params, in);
  EXPECT_NEAR(engine->loss(), loss, 1e-4 * std::max(1.0, std::abs(loss)));

  Checked c;
  auto compare = [&](double analytic, double& value) {
    const double h = 1e-5, saved = value;
    value = saved + h;
    const double up = reference_loss(g, params, in);
    value = saved - h;
    const double down = reference_loss(g, params, in);
    value = saved;
    const double numeric = (up - down) / (2 * h);
    const double err = std::abs(analytic - numeric) / (1e-6 + 1e-4 * std::abs(numeric));
    c.worst = std::max(c.worst, err);
    ++c.values;
    return err <= 1.0;
  };
  for (std::size_t p = 0; p < params.size(); ++p) {
    const auto grad = engine->gradient(static_cast<int>(p));
    for (std::size_t k = 0; k < grad.size(); ++k)
      EXPECT_TRUE(compare(grad[k], params[p][k])) << "param " << p << " element " << k << " analytic " << grad[k];
  }
  const auto dx = engine->input_gradient();
  for (std::size_t k = 0; k < dx.size(); ++k)
    EXPECT_TRUE(compare(dx[k], in.images[k])) << "input element " << k << " analytic " << dx[k];
  return c;
}

// input {4, 5, 5} → body → linear(3) → softmax cross-entropy, batch 3.
Graph tiny(const std::function<int(Graph&, int)>& body, Shape input = {4, 5, 5}) {
  Graph g("tiny", input, 3);
  g.softmax_ce(g.linear(body(g, g.input()), 3));
  return g;
}

void expect_checked(const Graph& g, int batch = 3) {
  const Checked c = check_gradients(g, batch);
  EXPECT_GT(c.values, 0);
  EXPECT_LE(c.worst, 1.0);
}

TEST(Gradients, ConvStridePaddingGroupsBias) {
  expect_checked(tiny([](Graph& g, int x) { return g.conv(x, 6, square(3, 2, 1), 2, true); }));
}

TEST(Gradients, ConvRectangularWindowNoBias) {
  expect_checked(tiny([](Graph& g, int x) { return g.conv(x, 3, {1, 3, 1, 1, 0, 1}); }));
}

TEST(Gradients, DepthwiseConv) {
  expect_checked(tiny([](Graph& g, int x) { return g.conv(x, 4, square(3, 1, 1), 4); }));
}

TEST(Gradients, BatchNorm) {
  expect_checked(tiny([](Graph& g, int x) { return g.batch_norm(g.conv(x, 3, square(3)), 1e-3f); }));
}

TEST(Gradients, Relu) {
  expect_checked(tiny([](Graph& g, int x) { return g.relu(g.conv(x, 3, square(3, 1, 1), 1, true)); }));
}

TEST(Gradients, MaxPool) {
  expect_checked(tiny([](Graph& g, int x) { return g.max_pool(x, square(3, 2, 1)); }));
}

TEST(Gradients, AvgPoolCountsPadding) {
  expect_checked(tiny([](Graph& g, int x) { return g.avg_pool(x, square(3, 1, 1)); }));
}

TEST(Gradients, GlobalAvgPool) {
  expect_checked(tiny([](Graph& g, int x) { return g.global_avg_pool(g.conv(x, 5, square(3))); }));
}

TEST(Gradients, ResidualAddWithSharedInput) {
  // The input feeds both the conv and the add: its gradient is the sum of two paths.
  expect_checked(tiny([](Graph& g, int x) { return g.add(x, g.conv(x, 4, square(3, 1, 1))); }));
}

TEST(Gradients, ConcatAlongChannels) {
  expect_checked(tiny([](Graph& g, int x) {
    return g.concat({g.conv(x, 2, square(1)), g.max_pool(x, square(3, 1, 1)), g.conv(x, 3, square(3, 1, 1))});
  }));
}

TEST(Gradients, LinearWithAndWithoutBias) {
  expect_checked(tiny([](Graph& g, int x) { return g.relu(g.linear(x, 6, false)); }));
}

TEST(Gradients, Dropout) {
  expect_checked(tiny([](Graph& g, int x) { return g.dropout(g.conv(x, 3, square(3)), 0.3f); }));
}

TEST(Gradients, WeightedSoftmaxCrossEntropyHeads) {
  // Two heads as in Inception v3 with its auxiliary classifier weighted 0.4.
  Graph g("heads", {4, 5, 5}, 3);
  const int trunk = g.relu(g.conv(g.input(), 4, square(3)));
  g.softmax_ce(g.linear(trunk, 3), 0.4f);
  g.softmax_ce(g.linear(g.global_avg_pool(trunk), 3));
  expect_checked(g);
}

TEST(Gradients, ResidualBlockWithProjection) {
  expect_checked(tiny([](Graph& g, int x) {
    const int y = g.batch_norm(g.conv(g.relu(g.batch_norm(g.conv(x, 6, square(3, 2, 1)))), 6, square(3, 1, 1)));
    return g.relu(g.add(y, g.batch_norm(g.conv(x, 6, square(1, 2)))));
  }));
}

TEST(Backward, AnnouncesEveryParameterOnceInReverseOrder) {
  Graph g = tiny([](Graph& gr, int x) { return gr.relu(gr.batch_norm(gr.conv(x, 3, square(3), 1, true))); });
  auto engine = make_cpu_engine(g, {.batch = 2});
  std::vector<float> images(static_cast<std::size_t>(g.input_shape().size() * 2), 0.5f);
  engine->set_batch(images, std::vector<int>{0, 2});
  engine->forward();
  std::vector<int> order;
  engine->backward([&](const GradientReady& r) {
    order.push_back(r.param);
    EXPECT_EQ(r.count, g.params()[static_cast<std::size_t>(r.param)].size());
    EXPECT_FALSE(r.on_device);
  });
  // linear (weight, bias), batch norm (scale, shift), conv (weight, bias): last layer first.
  EXPECT_EQ(order, (std::vector<int>{4, 5, 2, 3, 0, 1}));
}

TEST(BatchNorm, RunningStatisticsFollowTorch) {
  Graph g = tiny([](Graph& gr, int x) { return gr.batch_norm(x); }, {1, 1, 2});
  auto engine = make_cpu_engine(g, {.batch = 2});
  engine->set_batch(std::vector<float>{1, 2, 3, 6}, std::vector<int>{0, 1});
  engine->forward();
  const auto [mean, var] = engine->running_stats(1);
  // batch mean 3, unbiased variance (4+1+0+9)/3; momentum 0.1 from (0, 1).
  EXPECT_FLOAT_EQ(mean.at(0), 0.3f);
  EXPECT_FLOAT_EQ(var.at(0), 0.9f + 0.1f * 14.f / 3.f);
}

}  // namespace
}  // namespace rocebench::models
